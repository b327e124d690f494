/**
 * Live updates (`deno task bench:feed`, also the last part of `deno task bench`): delivery latency
 * from a write's request to its event at every subscriber, p50 and p99, with 1, 100 and 1,000
 * subscribers open on `GET /addresses/events`, and the server's memory per idle stream. One server
 * process (`deno task start`'s flags, the gRPC listener off: it holds none of the streams), a
 * fresh KV; the subscribers and the writer are this process.
 */
import { startService } from "./service.ts";
import { processTree } from "./proc.ts";
import { sseFrames } from "../tests/support/event_doors.ts";
import { EXAMPLE_INPUT } from "../lib/address.ts";

const SUBSCRIBERS = (Deno.env.get("BENCH_FEED_SUBSCRIBERS") ?? "1,100,1000").split(",").map(Number);
const WRITES = 200;

interface Subscriber {
  arrivals: Map<number, number>;
  abort: AbortController;
}

/** Opens a stream and records when each change's id arrives. */
async function subscribe(url: string): Promise<Subscriber> {
  const abort = new AbortController();
  const response = await fetch(`${url}/addresses/events`, { signal: abort.signal });
  if (!response.ok) throw new Error(`stream refused: ${response.status} ${await response.text()}`);
  const arrivals = new Map<number, number>();
  const frames = sseFrames(response.body!);
  await frames.next(); // the opening position
  void (async () => {
    try {
      for await (const frame of frames) {
        if (frame.data !== undefined) arrivals.set(JSON.parse(frame.data).id, performance.now());
      }
    } catch { /* closed at the end */ }
  })();
  return { arrivals, abort };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/** The resident memory of the process tree under `pid` (`deno task` and the server it runs). */
async function rssKiB(pid: number): Promise<number> {
  let total = 0;
  for (const each of await processTree(pid)) {
    const status = await Deno.readTextFile(`/proc/${each}/status`).catch(() => "");
    total += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  }
  return total;
}

/** A server of its own for one round, so what the streams hold is not hidden by a previous peak. */
async function startServer(dir: string, n: number) {
  return await startService({
    name: "ours",
    command: [Deno.execPath(), "task", "--quiet", "start"],
    env: {
      ...Deno.env.toObject(),
      PORT: "0",
      GRPC_PORT: "off",
      KV_PATH: `${dir}/kv-${n}.sqlite3`,
      LOG_LEVEL: "warn",
      EVENTS_MAX_STREAMS: "5000",
      EVENTS_MAX_STREAMS_PER_CALLER: "5000",
    },
  });
}

async function write(url: string): Promise<number> {
  const answer = await fetch(`${url}/addresses`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(EXAMPLE_INPUT),
  });
  return (await answer.json()).id;
}

/** The memory a raw Deno.serve holding `n` idle event streams adds per stream, in KiB. */
async function rawStreamKiB(n: number): Promise<number> {
  const peer = await startService({
    name: "raw Deno.serve",
    command: [
      Deno.execPath(),
      "run",
      "--allow-net",
      new URL("peers/raw_sse.ts", import.meta.url).pathname,
    ],
  });
  const url = String(peer.listening.http);
  try {
    const warm = await subscribe(url);
    warm.abort.abort();
    await new Promise((r) => setTimeout(r, 1000));
    const before = await rssKiB(peer.pid);
    const open: Subscriber[] = [];
    for (let i = 0; i < n; i++) open.push(await subscribe(url));
    await new Promise((r) => setTimeout(r, 1000));
    const added = (await rssKiB(peer.pid) - before) / n;
    for (const s of open) s.abort.abort();
    return added;
  } finally {
    await peer.stop();
  }
}

export async function feedBench(): Promise<string[]> {
  const lines = [
    "| subscribers | deliveries | p50 ms | p99 ms | max ms | RSS per idle stream | raw Deno.serve's |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  const dir = await Deno.makeTempDir({ prefix: "books-bench-feed-" });
  try {
    for (const n of SUBSCRIBERS) {
      const server = await startServer(dir, n);
      const url = String(server.listening.http).replace("0.0.0.0", "127.0.0.1");
      try {
        // Warmed by a few writes and a stream, then the memory the streams add, idle.
        const warm = await subscribe(url);
        for (let i = 0; i < 20; i++) await write(url);
        warm.abort.abort();
        await new Promise((r) => setTimeout(r, 1000));
        const before = await rssKiB(server.pid);
        const subscribers: Subscriber[] = [];
        for (let i = 0; i < n; i++) subscribers.push(await subscribe(url));
        await new Promise((r) => setTimeout(r, 1000));
        const after = await rssKiB(server.pid);
        const perStream = (after - before) / n;
        const sent = new Map<number, number>();
        for (let i = 0; i < WRITES; i++) {
          const started = performance.now();
          sent.set(await write(url), started);
          // Paced, so each write's latency is its own, not a queue's.
          await new Promise((r) => setTimeout(r, 5));
        }
        const deadline = Date.now() + 10_000;
        while (Date.now() < deadline && subscribers.some((s) => s.arrivals.size < WRITES)) {
          await new Promise((r) => setTimeout(r, 50));
        }
        const latencies: number[] = [];
        let missing = 0;
        for (const s of subscribers) {
          for (const [id, at] of sent) {
            const arrived = s.arrivals.get(id);
            if (arrived === undefined) missing++;
            else latencies.push(arrived - at);
          }
          s.abort.abort();
        }
        latencies.sort((a, b) => a - b);
        const raw = await rawStreamKiB(n);
        const fmt = (ms: number) => ms.toFixed(1);
        lines.push(
          `| ${n} | ${latencies.length}${missing ? ` (${missing} missing)` : ""} | ${
            fmt(percentile(latencies, 0.5))
          } | ${fmt(percentile(latencies, 0.99))} | ${fmt(latencies.at(-1)!)} | ${
            perStream.toFixed(1)
          } KiB | ${raw.toFixed(1)} KiB |`,
        );
      } finally {
        await server.stop();
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  return lines;
}

if (import.meta.main) {
  console.log((await feedBench()).join("\n"));
}
