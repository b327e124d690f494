/** The environment variable that names a test run's import map to the processes it starts. */
export const IMPORT_MAP_ENV = "BOOKS_TEST_IMPORT_MAP";

/**
 * The `deno` flags of a process a test starts (the gRPC child, an operator tool), so that it runs
 * the modules the test runs: the run's import map, when it has one (tests/support/optional_field.ts).
 */
export function childDenoFlags(): string[] {
  const map = Deno.env.get(IMPORT_MAP_ENV);
  return map ? [`--import-map=${map}`] : [];
}

/** A process the test started, with everything it wrote so far. */
export interface Spawned {
  pid: number;
  /** stdout and stderr so far, interleaved as read. */
  output(): string;
  /** JSON lines of stdout so far (lines that are not JSON are skipped). */
  lines(): Record<string, unknown>[];
  /** Sends `signal` (SIGTERM by default) and waits for exit; resolves to the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
  /** Resolves to the exit code once the process ended by itself (or was stopped). */
  exited: Promise<number>;
  /** Writes `text` to its stdin (spawned with `input`; else stdin is closed from the start). */
  input(text: string): Promise<void>;
}

/**
 * Spawns `deno <args>` (or `command <args>`, a wrapper that runs deno) with `env` added to this
 * process's environment, in `cwd` if given, with its stdin a pipe when `input` is set.
 */
export function spawnDeno(
  args: string[],
  env: Record<string, string>,
  cwd?: string,
  command: string = Deno.execPath(),
  input = false,
): Spawned {
  const child = new Deno.Command(command, {
    args,
    // No drain on SIGTERM unless a test asks for one.
    env: { SHUTDOWN_DRAIN_S: "0", ...env },
    ...(cwd === undefined ? {} : { cwd }),
    stdin: input ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  let stdout = "";
  const pump = async (stream: ReadableStream<Uint8Array>, isStdout: boolean) => {
    const streamDecoder = new TextDecoder();
    for await (const chunk of stream) {
      const part = streamDecoder.decode(chunk, { stream: true });
      text += part;
      if (isStdout) stdout += part;
    }
  };
  const pumps = Promise.all([pump(child.stdout, true), pump(child.stderr, false)]);
  const exited = (async () => {
    const status = await child.status;
    await pumps;
    return status.code;
  })();
  const encoder = new TextEncoder();
  return {
    pid: child.pid,
    exited,
    input: async (text) => {
      const writer = child.stdin.getWriter();
      try {
        await writer.write(encoder.encode(text));
      } finally {
        writer.releaseLock();
      }
    },
    output: () => text,
    lines: () =>
      stdout.split("\n").flatMap((line) => {
        // `deno serve --parallel` prefixes each worker's lines with `[serve-worker-N ] `.
        const json = line.slice(line.indexOf("{"));
        try {
          return json.startsWith("{") ? [JSON.parse(json) as Record<string, unknown>] : [];
        } catch {
          return [];
        }
      }),
    stop: async (signal = "SIGTERM") => {
      try {
        child.kill(signal);
      } catch { /* already gone */ }
      const status = await child.status;
      await pumps;
      return status.code;
    },
  };
}

/** main.ts, as a path for `deno run`. */
export const MAIN = new URL("../../main.ts", import.meta.url).pathname;

/** What `deno task start` grants main.ts. */
export const START_PERMISSIONS = [
  "--allow-net",
  "--allow-env",
  "--allow-read",
  "--allow-write",
  "--allow-run",
];

/**
 * Spawns `deno run <flags> <permissions> main.ts` (START_PERMISSIONS unless given) with `env`
 * added; the test chooses the ports (tests/support/server.ts `spawnServer` takes port 0 and
 * reads them from the `listening` line).
 */
export function spawnMain(
  env: Record<string, string>,
  options: { permissions?: string[]; flags?: string[]; cwd?: string } = {},
): Spawned {
  const permissions = options.permissions ?? START_PERMISSIONS;
  const flags = [...childDenoFlags(), ...options.flags ?? []];
  return spawnDeno(["run", ...flags, ...permissions, MAIN], withChildFlags(env), options.cwd);
}

/** `env` with the gRPC child's `deno` flags (childDenoFlags) unless it names its own. */
export function withChildFlags(env: Record<string, string>): Record<string, string> {
  const flags = childDenoFlags();
  return flags.length === 0 ? env : { GRPC_CHILD_DENO_FLAGS: flags.join(" "), ...env };
}

/** A main.ts process on ports chosen here. */
export interface MainProcess extends Spawned {
  port: number;
  baseUrl: string;
  /** The gRPC listener's port, unless `env` chose GRPC_PORT itself. */
  grpcPort: number | undefined;
}

/**
 * `spawnMain` on 127.0.0.1 and free ports (the gRPC listener's too unless `env` sets
 * GRPC_PORT), for tests that reach the server before its `listening` line or after a restart.
 */
export function spawnMainOnFreePorts(
  env: Record<string, string>,
  options: Parameters<typeof spawnMain>[1] = {},
): MainProcess {
  const port = freePort();
  const grpcPort = env.GRPC_PORT === undefined ? freePort() : undefined;
  const process = spawnMain({
    PORT: String(port),
    ...(grpcPort === undefined ? {} : { GRPC_PORT: String(grpcPort) }),
    HOST: "127.0.0.1",
    ...env,
  }, options);
  return { ...process, port, baseUrl: `http://127.0.0.1:${port}`, grpcPort };
}

/** Runs main.ts to its end (a start-up that is refused); its exit code and what it wrote. */
export async function runMain(
  env: Record<string, string>,
  options: { permissions?: string[]; clearEnv?: boolean } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...options.permissions ?? ["--allow-all"], MAIN],
    env,
    clearEnv: options.clearEnv ?? false,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/** A TCP port that was free a moment ago (for servers that cannot report a port 0 binding). */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** True when something accepts TCP connections on the port. */
export async function accepts(port: number): Promise<boolean> {
  try {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    conn.close();
    return true;
  } catch {
    return false;
  }
}

/** Polls `probe` every 10 ms until it returns a value; fails after `ms`. */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  ms = 30_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The status of `GET url`, or undefined when nothing accepts the connection. */
export async function statusOf(url: string): Promise<number | undefined> {
  try {
    const response = await fetch(url);
    await response.body?.cancel();
    return response.status;
  } catch {
    return undefined;
  }
}

/** Waits until `GET url` answers `status`. */
export function untilStatus(url: string, status: number, what = `${url} to answer ${status}`) {
  return waitFor(what, async () => (await statusOf(url)) === status || undefined);
}
