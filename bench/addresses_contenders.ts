import type { BenchContext } from "./contenders.ts";
import { httpUrlOf, startOurs } from "./ours.ts";
import type { Contender, Measurement } from "./runner.ts";
import { memoryOf } from "./proc.ts";
import { EXAMPLE_INPUT } from "../lib/address.ts";
import { pinned } from "./tools.ts";
import type { Service } from "./service.ts";
import { runWrk } from "./wrk.ts";

/** The address every creation sends: the table's example (lib/address.ts), every field set. */
export const ADDRESS_INPUT = EXAMPLE_INPUT;

/** Body lengths of a 201 for ids of 1 to 16 digits, from one real answer of the server. */
export function createdLengths(sample: { body: string; id: number }): number[] {
  const rest = sample.body.length - String(sample.id).length;
  return Array.from({ length: 16 }, (_, i) => rest + i + 1);
}

/** Every address id the server lists, paging through `GET /addresses`. */
export async function listedIds(baseUrl: string): Promise<Set<number>> {
  const ids = new Set<number>();
  let cursor: string | null = null;
  do {
    const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
    const response = await fetch(`${baseUrl}/addresses?limit=500${query}`);
    if (response.status !== 200) throw new Error(`GET /addresses answered ${response.status}`);
    const page = await response.json() as { addresses: { id: number }[]; nextCursor: string };
    for (const a of page.addresses) ids.add(a.id);
    cursor = page.nextCursor;
  } while (cursor);
  return ids;
}

async function readIds(path: string): Promise<number[]> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return text.split("\n").filter((l) => l !== "").map(Number);
}

/**
 * `POST /addresses` against this project's server, on a fresh KV file each round. After the
 * load the server is killed with SIGKILL (no graceful flush) and restarted on the same file:
 * every id answered 201 must be listed (it was committed before it was answered), and no id may
 * have been answered twice.
 */
export function postAddressesContender(
  ctx: BenchContext,
  options: {
    bodyFile: string;
    lengths: number[];
    name?: string;
    role?: Contender["role"];
    /** Starts the server under test on a KV directory (default: `deno task start`'s way). */
    start?: (kvDir: string) => Promise<Service>;
    /**
     * Starts a server on the same KV after the kill, to list what was stored (default: `deno task
     * start`'s way); one that reads the KV's storage layout.
     */
    restart?: (kvDir: string) => Promise<Service>;
  },
): Contender {
  const place = { root: ctx.root, serverCpus: ctx.tools.serverCpus };
  const start = options.start ?? ((kvDir: string) => startOurs(place, { kvDir }));
  // Servers of the current round, stopped by finish() when an error cut the round short.
  const live = new Set<Service>();
  return {
    name: options.name ?? "ours",
    role: options.role ?? "ours",
    async prepare() {},
    async measure(round): Promise<Measurement> {
      const dir = await Deno.makeTempDir({ dir: ctx.tmp, prefix: `post-${round}-` });
      const server = await start(dir);
      live.add(server);
      const url = `${httpUrlOf(server)}/addresses`;
      const load = {
        url,
        connections: ctx.opts.connections,
        cpus: ctx.tools.clientCpus,
        status: 201,
        lengths: options.lengths,
        method: "POST" as const,
        bodyFile: options.bodyFile,
      };
      const warm = await runWrk({ ...load, seconds: ctx.opts.warmup, idsFile: `${dir}/warm.ids` });
      const cpu = await server.cpuSeconds();
      const r = await runWrk({ ...load, seconds: ctx.opts.duration, idsFile: `${dir}/run.ids` });
      const cpuUsPerRequest = (await server.cpuSeconds() - cpu) * 1e6 / r.requests;
      const memory = memoryOf(await server.peakMemory());
      await server.stop("SIGKILL");
      live.delete(server);
      const again = await (options.restart ??
        ((kvDir: string) => startOurs(place, { kvDir, name: "ours (restarted)" })))(dir);
      live.add(again);
      const stored = await listedIds(httpUrlOf(again));
      await again.stop();
      live.delete(again);
      const answered = [...await readIds(`${dir}/warm.ids`), ...await readIds(`${dir}/run.ids`)];
      const duplicates = answered.length - new Set(answered).size;
      const missing = answered.filter((id) => !stored.has(id)).length;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      let firstFailure = warm.firstFailure || r.firstFailure;
      if (!firstFailure && duplicates > 0) firstFailure = `${duplicates} ids answered twice`;
      if (!firstFailure && missing > 0) firstFailure = `${missing} answered ids lost after kill -9`;
      return {
        ...r,
        cpuUsPerRequest,
        failures: warm.failures + r.failures + duplicates + missing,
        firstFailure,
        ...memory,
        notes: [
          `round ${
            round + 1
          }: ${answered.length} creations answered 201, ${duplicates} duplicate ` +
          `ids, ${missing} missing after SIGKILL and restart (${stored.size} stored)`,
        ],
      };
    },
    async finish() {
      for (const service of live) await service.stop("SIGKILL");
      return { peakRssMiB: NaN };
    },
  };
}

/** The naive KV loop (bench/peers/naive_kv.ts) with `workers` concurrent workers. */
export function naiveKvContender(
  ctx: BenchContext,
  options: { workers: number; name: string; role: Contender["role"]; once?: boolean },
): Contender {
  const script = new URL("./peers/naive_kv.ts", import.meta.url).pathname;
  return {
    name: options.name,
    role: options.role,
    once: options.once,
    async prepare() {},
    async measure(round): Promise<Measurement> {
      const dir = await Deno.makeTempDir({ dir: ctx.tmp, prefix: `naive-${round}-` });
      const command = pinned(ctx.tools.serverCpus, [
        Deno.execPath(),
        "run",
        // Deno grants /proc (the loop's own CPU time and peak RSS) only with --allow-all.
        "--allow-all",
        script,
      ]);
      const out = await new Deno.Command(command[0]!, {
        args: command.slice(1),
        cwd: ctx.root,
        env: {
          KV_PATH: `${dir}/kv.sqlite3`,
          WORKERS: String(options.workers),
          WARMUP: String(ctx.opts.warmup),
          SECONDS: String(ctx.opts.duration),
        },
        stdout: "piped",
        stderr: "piped",
      }).output();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      const text = new TextDecoder().decode(out.stdout);
      if (out.code !== 0) {
        throw new Error(`naive KV loop failed: ${text}${new TextDecoder().decode(out.stderr)}`);
      }
      const r = JSON.parse(text.trim().split("\n").at(-1)!);
      const consistent = r.stored === r.created && r.counter === r.created;
      return {
        rps: r.rps,
        p50Ms: r.p50Ms,
        p99Ms: r.p99Ms,
        requests: r.requests,
        seconds: r.seconds,
        failures: consistent ? 0 : 1,
        firstFailure: consistent ? "" : `created ${r.created}, stored ${r.stored}`,
        peakRssMiB: r.peakRssMiB,
        cpuUsPerRequest: r.cpuUsPerCreation,
        notes: [`round ${round + 1}: ${r.conflicts} counter conflicts retried`],
      };
    },
    finish: () => Promise.resolve({ peakRssMiB: NaN }),
  };
}
