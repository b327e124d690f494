// The bench's Go programs, the grpc-go peer (bench/peers/grpc_go/main.go) and the matrix's gRPC
// load generator (bench/matrix/grpc_load/main.go): built offline with the system's Go against the
// grpc-go sources Debian ships (golang-google-grpc-dev, in GOPATH mode: no module download), each
// binary cached by a hash of its source, the Go version and grpc-go's version.
import type { PeerPlace } from "./peer_services.ts";
import { type Service, startService } from "./service.ts";

/** Debian's Go sources; BENCH_GOPATH may point elsewhere (it must hold google.golang.org/grpc). */
const DEFAULT_GOPATH = "/usr/share/gocode";
/** The Go programs, by name: their source directories. */
const SOURCES = {
  grpc_go: new URL("./peers/grpc_go/", import.meta.url).pathname,
  grpc_load: new URL("./matrix/grpc_load/", import.meta.url).pathname,
};

async function run(command: string, args: string[], env?: Record<string, string>, cwd?: string) {
  try {
    const out = await new Deno.Command(command, {
      args,
      env,
      cwd,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    return { ok: out.code === 0, text: text.trim() };
  } catch (error) {
    return { ok: false, text: String(error) };
  }
}

/** The Go toolchain and grpc-go sources the peer builds with, or why it cannot be built. */
export type GoToolchain =
  | { gopath: string; go: string; grpcGo: string }
  | { missing: string };

export async function findGoToolchain(): Promise<GoToolchain> {
  const install = "bench/setup.sh installs them (Debian packages golang-go, " +
    "golang-google-grpc-dev)";
  const version = await run("go", ["version"]);
  if (!version.ok) return { missing: `Go is not installed; ${install}` };
  const gopath = Deno.env.get("BENCH_GOPATH") || DEFAULT_GOPATH;
  const versionFile = `${gopath}/src/google.golang.org/grpc/version.go`;
  const text = await Deno.readTextFile(versionFile).catch(() => undefined);
  if (text === undefined) return { missing: `no grpc-go sources at ${versionFile}; ${install}` };
  const grpcGo = /Version = "([^"]+)"/.exec(text)?.[1] ?? "unknown";
  return { gopath, go: version.text.replace(/^go version /, ""), grpcGo };
}

async function sha256Hex(parts: string[]): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(parts.join("\0")),
  );
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function cacheDir(): string | undefined {
  const xdg = Deno.env.get("XDG_CACHE_HOME");
  const home = Deno.env.get("HOME");
  if (xdg) return `${xdg}/books-bench`;
  return home ? `${home}/.cache/books-bench` : undefined;
}

/**
 * Builds a Go program of the bench (default: the grpc-go peer) into `tmp` (GOPATH mode, no
 * network, no cgo) unless a binary of the same source and toolchain is cached; returns its path.
 */
export async function buildGrpcGo(
  toolchain: { gopath: string; go: string; grpcGo: string },
  tmp: string,
  program: keyof typeof SOURCES = "grpc_go",
): Promise<string> {
  const dir = SOURCES[program];
  const source = await Deno.readTextFile(`${dir}main.go`);
  const key = (await sha256Hex([source, toolchain.go, toolchain.grpcGo, toolchain.gopath]))
    .slice(0, 16);
  const cache = cacheDir();
  const cached = cache && `${cache}/${program}-${key}`;
  if (cached && await Deno.stat(cached).then((s) => s.isFile, () => false)) return cached;
  const binary = `${tmp}/${program}`;
  const env: Record<string, string> = {
    GO111MODULE: "off",
    GOPATH: toolchain.gopath,
    GOFLAGS: "",
    GOPROXY: "off",
    CGO_ENABLED: "0",
  };
  if (!cache) env.GOCACHE = `${tmp}/go-build`;
  // GOPATH mode takes a package outside GOPATH only by a relative path.
  const built = await run("go", ["build", "-o", binary, "."], env, dir);
  if (!built.ok) throw new Error(`${program} did not build:\n${built.text.slice(0, 2000)}`);
  if (cached) {
    // Copied under a temporary name, then renamed: a bench stopped mid-copy leaves no half binary.
    await Deno.mkdir(cache, { recursive: true });
    await Deno.copyFile(binary, `${cached}.part`);
    await Deno.rename(`${cached}.part`, cached);
  }
  return binary;
}

/** The grpc-go peer on one core (GOMAXPROCS=1, pinned with the other servers). */
export function startGrpcGo(
  place: PeerPlace,
  binary: string,
  messageFile: string,
): Promise<Service> {
  return startService({
    name: "grpc-go",
    command: [binary],
    env: { BOOKS_MESSAGE: messageFile, GOMAXPROCS: "1" },
    cwd: place.root,
    cpus: place.serverCpus,
  });
}
