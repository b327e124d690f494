import { postAddressesContender } from "./addresses_contenders.ts";
import { type BenchContext, httpContender, type WrkLoad } from "./contenders.ts";
import { type Place, startOurs } from "./ours.ts";
import type { Workload } from "./runner.ts";
import { type Service, startService } from "./service.ts";

/** Workers of the `deno serve --parallel` rows. */
export const SERVE_WORKERS = 2;
const SERVED = `deno serve --parallel, ${SERVE_WORKERS} workers`;
const ONE_PROCESS = "one process (deno task start)";

/**
 * The permission and V8 flags of `deno task serve`, read from deno.json (as startFlags does for
 * `start`); the temporary KV directory is added to the writable paths.
 */
async function serveFlags(root: string, writable: string): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(`${root}/deno.json`));
  const task = String(config.tasks?.serve ?? "");
  const words = task.split(/\s+/).filter((w) =>
    w.startsWith("--allow-") || w.startsWith("--v8-flags=")
  );
  if (words.length === 0) throw new Error("deno.json has no `serve` task to take flags from");
  return words.map((w) => w.startsWith("--allow-write=") ? `${w},${writable}` : w);
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/**
 * Starts `main.ts` under `deno serve --parallel` with `SERVE_WORKERS` workers on one KV file in
 * `kvDir`, on a free port (a served module cannot report its port: the `listening` line of the
 * first worker is waited for and given the URL).
 */
export async function startServed(
  place: Place,
  options: { kvDir: string; name?: string },
): Promise<Service> {
  const port = freePort();
  const service = await startService({
    name: options.name ?? SERVED,
    command: [
      Deno.execPath(),
      "serve",
      "--parallel",
      "--port",
      String(port),
      "--host",
      "127.0.0.1",
      ...await serveFlags(place.root, options.kvDir),
      "main.ts",
    ],
    env: {
      DENO_JOBS: String(SERVE_WORKERS),
      KV_PATH: `${options.kvDir}/kv.sqlite3`,
      LOG_LEVEL: "info",
      // Stopped between rounds: no orchestrator to drain for.
      SHUTDOWN_DRAIN_S: "0",
    },
    cwd: place.root,
    cpus: place.serverCpus,
  });
  service.listening.http = `http://127.0.0.1:${port}`;
  // Every worker opens storage on its own; wait until the port answers as a whole.
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(async (r) => {
      await r.body?.cancel();
      return r.status === 200;
    }, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return service;
}

/**
 * `deno serve --parallel` against one process, on the catalogue list and on creations. Both are
 * pinned to the same server CPUs as every other row, so on a 2-core machine (one core for the
 * servers, one for wrk) the workers share one core: the rows show what the second worker costs
 * there, and only a machine with spare cores shows what it gains. Creations have issue 28's
 * targets: at least as many per second as one process on the same cores, and a p99 within 2×
 * of its p99.
 */
export function buildServeWorkloads(
  ctx: BenchContext,
  spec: { load: string; restLoad: WrkLoad; bodyFile: string; createdLengths: number[] },
): Workload[] {
  const place = { root: ctx.root, serverCpus: ctx.tools.serverCpus };
  const kvDir = () => Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-serve-" });
  const pinning = ctx.tools.serverCpus === undefined
    ? "not pinned"
    : `both pinned to CPU ${ctx.tools.serverCpus}, wrk to CPU ${ctx.tools.clientCpus}`;
  const list: Workload = {
    id: "serve-rest-books",
    title: `GET /rest/books: ${SERVED} against one process`,
    load: `${spec.load}; ${pinning}`,
    checks: "every response: status and exact body size (wrk Lua hook)",
    contenders: [
      httpContender({
        ctx,
        name: SERVED,
        role: "ours",
        start: async () => startServed(place, { kvDir: await kvDir() }),
        path: "/rest/books",
        load: spec.restLoad,
      }),
      httpContender({
        ctx,
        name: ONE_PROCESS,
        role: "info",
        start: async () => startOurs(place, { kvDir: await kvDir() }),
        path: "/rest/books",
        load: spec.restLoad,
      }),
    ],
    targets: [],
  };
  const create: Workload = {
    id: "serve-addresses",
    title: `POST /addresses: ${SERVED} against one process (fresh KV file each round)`,
    load: `${spec.load}; ${pinning}`,
    checks: "every response: status 201 and body size (wrk Lua hook); every id answered 201 " +
      "found after SIGKILL and restart; no id answered twice (across workers too)",
    contenders: [
      postAddressesContender(ctx, {
        bodyFile: spec.bodyFile,
        lengths: spec.createdLengths,
        name: SERVED,
        start: (dir) => startServed(place, { kvDir: dir }),
      }),
      // Both with the defaults (auth off: no quota, so the count is summed, not checked).
      postAddressesContender(ctx, {
        bodyFile: spec.bodyFile,
        lengths: spec.createdLengths,
        name: ONE_PROCESS,
        role: "peer",
        start: (dir) => startOurs(place, { kvDir: dir, defaultQuota: true }),
      }),
    ],
    targets: [
      { against: ONE_PROCESS, min: 1 },
      { measure: "p99", against: ONE_PROCESS, max: 2 },
    ],
  };
  return [list, create];
}
