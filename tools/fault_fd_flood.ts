/**
 * Descriptor exhaustion under a running server, measured (docs/failures.md):
 *
 *   deno run -A tools/fault_fd_flood.ts [--limit 256] [--connections 400] [--hold-ms 3000] [--main main.ts]
 *
 * Starts the server (`deno run main.ts`, gRPC off), lowers its open-files limit with util-linux's
 * prlimit (lowering needs no privilege), opens `--connections` idle TCP connections to the HTTP
 * port, holds them for `--hold-ms` (opening more whenever one is accepted, so descriptors stay
 * exhausted), closes them, and measures how long until the same process answers /healthz and
 * /readyz with 200 again. Prints one JSON summary.
 */
import { parseArgs } from "node:util";

const args = parseArgs({
  options: {
    limit: { type: "string", default: "256" },
    connections: { type: "string", default: "400" },
    "hold-ms": { type: "string", default: "3000" },
    main: { type: "string", default: new URL("../main.ts", import.meta.url).pathname },
  },
});
const dir = await Deno.makeTempDir({ prefix: "books-fd-flood-" });
const port = 20000 + Math.floor(Math.random() * 20000);
const base = `http://127.0.0.1:${port}`;
const child = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", args.values.main],
  env: {
    PORT: String(port),
    GRPC_PORT: "off",
    HOST: "127.0.0.1",
    KV_PATH: `${dir}/kv.sqlite3`,
    SHUTDOWN_DRAIN_S: "0",
  },
  stdout: "piped",
  stderr: "piped",
}).spawn();
let log = "";
for (const stream of [child.stdout, child.stderr]) {
  (async () => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) log += chunk;
  })();
}
let exited: number | undefined;
child.status.then((s) => exited = s.code);

async function status(path: string): Promise<number | undefined> {
  try {
    const response = await fetch(`${base}${path}`);
    await response.body?.cancel();
    return response.status;
  } catch {
    return undefined;
  }
}

async function waitUntil(probe: () => Promise<boolean>, ms = 60_000): Promise<number | null> {
  const started = performance.now();
  while (!(await probe())) {
    if (exited !== undefined || performance.now() - started > ms) return null;
    await new Promise((r) => setTimeout(r, 10));
  }
  return Math.round(performance.now() - started);
}

const result: Record<string, unknown> = {};
const conns: Deno.Conn[] = [];
try {
  await waitUntil(async () => (await status("/readyz")) === 200);
  const lowered = await new Deno.Command("prlimit", {
    args: ["--pid", String(child.pid), `--nofile=${args.values.limit}:${args.values.limit}`],
  }).output();
  if (!lowered.success) throw new Error(new TextDecoder().decode(lowered.stderr));
  let refused = 0;
  for (let i = 0; i < Number(args.values.connections); i++) {
    try {
      conns.push(await Deno.connect({ hostname: "127.0.0.1", port }));
    } catch {
      refused++;
    }
  }
  result.opened = conns.length;
  result.refused = refused;
  const holdUntil = performance.now() + Number(args.values["hold-ms"]);
  while (performance.now() < holdUntil) {
    try {
      conns.push(await Deno.connect({ hostname: "127.0.0.1", port }));
    } catch {
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  result.heldAtRelease = conns.length;
  for (const conn of conns.splice(0)) conn.close();
  const released = performance.now();
  result.healthzAfterMs = await waitUntil(async () => (await status("/healthz")) === 200);
  result.readyzAfterMs = await waitUntil(async () => (await status("/readyz")) === 200);
  result.measuredFromRelease = Math.round(performance.now() - released);
  result.processAlive = exited === undefined;
} finally {
  for (const conn of conns) conn.close();
  if (exited === undefined) child.kill("SIGTERM");
  result.exitCode = (await child.status).code;
  result.logLines = log.split("\n").filter((l) =>
    /http listener|Uncaught|Too many open files/i.test(l)
  ).map((l) => l.slice(0, 300));
  await Deno.remove(dir, { recursive: true });
}
console.log(JSON.stringify(result, null, 2));
