import type { BenchContext } from "./contenders.ts";
import { httpUrlOf, type Place, startOurs } from "./ours.ts";
import { memoryOf } from "./proc.ts";
import type { Contender, Measurement, Workload } from "./runner.ts";
import { SEEDING } from "./seed_addresses.ts";
import type { Service } from "./service.ts";
import { latencySummary } from "./stats.ts";
import { pinned } from "./tools.ts";

/** What the fill reported (bench/seed_addresses.ts run as a script). */
interface Filled {
  count: number;
  seconds: number;
  cpuSeconds: number;
  peakRssMiB: number;
  fileMiB: number;
}

const mib = (n: number) => `${n.toFixed(0)} MiB`;
const thousands = (n: number) => n.toLocaleString("en-US");

/** Fills a fresh KV file with `count` addresses in a process of its own, on the server cores. */
async function fill(ctx: BenchContext, kvPath: string, count: number): Promise<Filled> {
  const script = new URL("./seed_addresses.ts", import.meta.url).pathname;
  // Deno grants /proc (the fill's own CPU time and peak RSS) only with --allow-all.
  const command = pinned(ctx.tools.serverCpus, [Deno.execPath(), "run", "--allow-all", script]);
  const out = await new Deno.Command(command[0]!, {
    args: command.slice(1),
    cwd: ctx.root,
    env: { KV_PATH: kvPath, COUNT: String(count) },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (out.code !== 0) {
    throw new Error(`the fill failed: ${text}${new TextDecoder().decode(out.stderr)}`);
  }
  return JSON.parse(text.trim().split("\n").at(-1)!);
}

/**
 * One phase on the filled file: a fresh server (as `deno task start` runs it, default settings),
 * its peak memory once started, then `run`, then its peak memory and CPU over the phase.
 */
async function phase(
  place: Place,
  kvDir: string,
  name: string,
  run: (base: string) => Promise<Omit<Measurement, "cpuUsPerRequest">>,
  live: Set<Service>,
): Promise<Measurement> {
  const server = await startOurs(place, { kvDir, name, defaultQuota: true });
  live.add(server);
  try {
    const before = (await server.peakMemory()).total;
    const cpu = await server.cpuSeconds();
    const m = await run(httpUrlOf(server));
    const cpuUsPerRequest = (await server.cpuSeconds() - cpu) * 1e6 / m.requests;
    const memory = memoryOf(await server.peakMemory());
    return {
      ...m,
      cpuUsPerRequest,
      ...memory,
      notes: [
        ...m.notes ?? [],
        `peak memory ${mib(memory.peakRssMiB)}, ${mib(memory.peakRssMiB - before)} over its ` +
        `peak before the phase (${mib(before)})`,
      ],
    };
  } finally {
    await server.stop();
    live.delete(server);
  }
}

/** `GET /addresses?limit=500` from the first page, following nextCursor to the end. */
async function walk(base: string, count: number): Promise<Omit<Measurement, "cpuUsPerRequest">> {
  const latencies: number[] = [];
  let seen = 0;
  let last = 0;
  let failures = 0;
  let firstFailure = "";
  let cursor: string | null = null;
  const started = performance.now();
  do {
    const sent = performance.now();
    const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
    const response = await fetch(`${base}/addresses?limit=500${query}`);
    const text = await response.text();
    latencies.push(performance.now() - sent);
    if (response.status !== 200) {
      failures++;
      firstFailure = `page ${latencies.length}: ${response.status} ${text.slice(0, 200)}`;
      break;
    }
    const page = JSON.parse(text) as { addresses: { id: number }[]; nextCursor: string | null };
    for (const { id } of page.addresses) {
      if (id <= last) {
        failures++;
        firstFailure ||= `page ${latencies.length}: id ${id} after ${last}`;
      }
      last = id;
    }
    seen += page.addresses.length;
    cursor = page.nextCursor;
  } while (cursor);
  const seconds = (performance.now() - started) / 1000;
  if (!failures && seen !== count) {
    failures++;
    firstFailure = `the walk listed ${seen} addresses of ${count}`;
  }
  return {
    ...latencySummary(latencies, seconds),
    failures,
    firstFailure,
    notes: [
      `${thousands(latencies.length)} pages in ${seconds.toFixed(1)} s: ` +
      `${(seconds * 1000 / latencies.length).toFixed(1)} ms per page, ` +
      `${(seconds * 1e6 / Math.max(1, seen)).toFixed(1)} µs per address`,
    ],
  };
}

/** `GET /addresses/export` (NDJSON), read to the end and discarded; counts its lines. */
async function exportAll(
  base: string,
  count: number,
): Promise<Omit<Measurement, "cpuUsPerRequest">> {
  const started = performance.now();
  const response = await fetch(`${base}/addresses/export`);
  let firstByteMs = NaN;
  let bytes = 0;
  let lines = 0;
  let tail = new Uint8Array(0);
  for await (const chunk of response.body ?? []) {
    if (bytes === 0) firstByteMs = performance.now() - started;
    bytes += chunk.byteLength;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
    tail = chunk;
  }
  const seconds = (performance.now() - started) / 1000;
  // The last line is the last address (ids 1 to count, ascending).
  const text = new TextDecoder().decode(tail).trimEnd();
  let lastId = NaN;
  try {
    lastId = JSON.parse(text.slice(text.lastIndexOf("\n") + 1)).id;
  } catch { /* reported below */ }
  let firstFailure = "";
  if (response.status !== 200) firstFailure = `export answered ${response.status}`;
  else if (lines !== count) firstFailure = `export had ${lines} lines for ${count} addresses`;
  else if (lastId !== count) firstFailure = `export ended with id ${lastId}, not ${count}`;
  return {
    rps: count / seconds,
    p50Ms: firstByteMs,
    p99Ms: seconds * 1000,
    requests: count,
    seconds,
    failures: firstFailure ? 1 : 0,
    firstFailure,
    notes: [
      `${thousands(count)} addresses, ${mib(bytes / 2 ** 20)} of NDJSON in ` +
      `${seconds.toFixed(2)} s (${(seconds * 1e6 / count).toFixed(1)} µs per address; first ` +
      `byte after ${firstByteMs.toFixed(1)} ms)`,
    ],
  };
}

/**
 * The opt-in 1M-address row of the scaling run (`BENCH_ONLY=scale-1m deno task bench:scale`):
 * fill BENCH_SCALE_ADDRESSES addresses into a fresh KV file, then, each on a fresh server on that
 * file, walk every page of 500 by nextCursor and stream the export, with the server's peak
 * memory in each. One pass, no peers: the rows are absolute numbers.
 */
export function buildScale1mWorkload(ctx: BenchContext): Workload {
  const place = { root: ctx.root, serverCpus: ctx.tools.serverCpus };
  const count = ctx.opts.scaleAddresses;
  const live = new Set<Service>();
  let kvDir: string | undefined;
  let filling: Promise<Filled> | undefined;
  const filled = () =>
    filling ??= (async () => {
      kvDir = await Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-scale-1m-" });
      return await fill(ctx, `${kvDir}/kv.sqlite3`, count);
    })();
  const contender = (
    name: string,
    measure: () => Promise<Measurement>,
  ): Contender => ({
    name,
    role: "info",
    once: true,
    async prepare() {},
    measure,
    async finish() {
      for (const service of live) await service.stop("SIGKILL");
      return { peakRssMiB: NaN };
    },
  });
  return {
    id: "scale-1m",
    title: `${thousands(count)} addresses: fill, page walk, export`,
    load: "one client, one request at a time (the bench's fetch); each phase on a fresh server " +
      "(`deno task start`'s way, default settings, auth off) on the filled KV file; once",
    checks: "the walk: every page 200, ids ascending without repeats, every address listed once " +
      "and nextCursor null at the end; the export: 200, one line per address, the last one the " +
      "highest id",
    contenders: [
      contender("fill (req/s: addresses/s)", async () => {
        const f = await filled();
        return {
          rps: f.count / f.seconds,
          p50Ms: NaN,
          p99Ms: NaN,
          requests: f.count,
          seconds: f.seconds,
          failures: 0,
          firstFailure: "",
          cpuUsPerRequest: f.cpuSeconds * 1e6 / f.count,
          peakRssMiB: f.peakRssMiB,
          notes: [
            `${thousands(f.count)} addresses in ${f.seconds.toFixed(1)} s through ${SEEDING}, ` +
            `in a process of its own; the KV file holds ${mib(f.fileMiB)}`,
          ],
        };
      }),
      contender("page walk, limit=500 (req/s: pages/s)", async () => {
        await filled();
        return await phase(place, kvDir!, "ours (page walk)", (base) => walk(base, count), live);
      }),
      contender("export (req/s: addresses/s; p50: first byte, p99: all)", async () => {
        await filled();
        return await phase(place, kvDir!, "ours (export)", (base) => exportAll(base, count), live);
      }),
    ],
    targets: [],
    showNotes: true,
    optIn: true,
  };
}
