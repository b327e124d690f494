import { percentileOfSorted } from "./stats.ts";
import { pinned } from "./tools.ts";

/** One h2load run of a unary gRPC call over HTTP/2 cleartext. */
export interface H2loadRun {
  /** Full URL of the method, e.g. `http://127.0.0.1:50051/books.v1.BooksService/books`. */
  url: string;
  /** Calls in all; a fixed count, so the DATA total can be checked exactly. */
  requests: number;
  /** Calls starting in the first this many seconds are warm-up: checked but not measured. */
  warmupSeconds: number;
  /** Connections and concurrent streams per connection. */
  clients: number;
  streams: number;
  cpus?: string | undefined;
  /** File holding the framed request message (5-byte gRPC prefix + protobuf). */
  dataFile: string;
  /**
   * Bytes of one framed response message; every call must carry exactly this much DATA. A range
   * when answers differ in size (an id's varint): the total must lie within calls × the bounds.
   */
  responseBytes: number | { min: number; max: number };
  /** Scratch file for h2load's per-request log (timing of each call). */
  logFile: string;
}

/** What h2load measured after the warm-up, and what the checks found over the whole run. */
export interface H2loadResult {
  requests: number;
  seconds: number;
  rps: number;
  /** Calls per second over the whole run, warm-up included (to size the next run). */
  allRps: number;
  p50Ms: number;
  p99Ms: number;
  /** Calls done in all, warm-up included. */
  calls: number;
  /** Calls whose HTTP status, stream state or DATA bytes were wrong. */
  failures: number;
  firstFailure: string;
}

function field(text: string, pattern: RegExp, name: string): number {
  const match = pattern.exec(text);
  if (!match) throw new Error(`h2load output has no ${name}:\n${text}`);
  return Number(match[1]);
}

/**
 * Runs h2load for a fixed number of calls on one set of connections. Throughput and latency come
 * from h2load's per-request log, counting only calls that started after the warm-up.
 *
 * h2load cannot read gRPC trailers (it counts a call ending in an error status as a 2xx
 * success), so every call is checked by its DATA bytes instead: a failed call is answered
 * trailers-only with no message, so the total must equal calls × `responseBytes` exactly. The
 * grpc-status itself is checked by sample calls with a real client (grpc_contenders.ts).
 */
export async function runH2load(run: H2loadRun): Promise<H2loadResult> {
  await Deno.remove(run.logFile).catch(() => {}); // h2load appends to an existing log
  const command = pinned(run.cpus, [
    "h2load",
    "-t",
    "1",
    "-c",
    String(run.clients),
    "-m",
    String(run.streams),
    "-n",
    String(run.requests),
    "-H",
    "content-type: application/grpc",
    "-H",
    "te: trailers",
    "-d",
    run.dataFile,
    `--log-file=${run.logFile}`,
    run.url,
  ]);
  const out = await new Deno.Command(command[0]!, {
    args: command.slice(1),
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (out.code !== 0) throw new Error(`h2load failed (exit ${out.code}):\n${text}`);
  const done = field(text, /requests: \d+ total, \d+ started, (\d+) done/, "done");
  const succeeded = field(text, /(\d+) succeeded/, "succeeded");
  const ok2xx = field(text, /status codes: (\d+) 2xx/, "2xx");
  const data = field(text, /\((\d+)\) data/, "data bytes");

  // Log columns: start (µs since the epoch), HTTP status, µs until the end of the response.
  const calls: { start: number; end: number }[] = [];
  let non200 = 0;
  for (const line of (await Deno.readTextFile(run.logFile).catch(() => "")).split("\n")) {
    if (!line) continue;
    const [start, status, us] = line.split("\t").map(Number) as [number, number, number];
    if (status !== 200) non200++;
    calls.push({ start, end: start + us });
  }
  // Loops, not Math.min(...spread): a round has more calls than the stack has room for.
  let first = Infinity;
  let last = -Infinity;
  for (const c of calls) {
    first = Math.min(first, c.start);
    last = Math.max(last, c.end);
  }
  const from = first + run.warmupSeconds * 1e6;
  const measured = calls.filter((c) => c.start >= from);
  let to = -Infinity;
  for (const c of measured) to = Math.max(to, c.end);
  const seconds = (to - from) / 1e6;
  const latencies = measured.map((c) => (c.end - c.start) / 1000).sort((a, b) => a - b);

  const failures = Math.max(run.requests - succeeded, done - ok2xx, non200);
  const { min, max } = typeof run.responseBytes === "number"
    ? { min: run.responseBytes, max: run.responseBytes }
    : run.responseBytes;
  let firstFailure = "";
  let badData = 0;
  if (failures > 0) {
    firstFailure = `${run.requests} calls: ${succeeded} succeeded, ${ok2xx} 2xx, ${non200} non-200`;
  } else if (data < done * min || data > done * max) {
    const each = min === max ? String(min) : `${min} to ${max}`;
    firstFailure = `DATA bytes ${data} != ${done} calls × ${each}`;
    badData = Math.max(1, done - Math.floor(data / max));
  } else if (measured.length === 0) {
    firstFailure = "no call started after the warm-up";
    badData = 1;
  }
  return {
    requests: measured.length,
    calls: done,
    seconds,
    rps: measured.length > 0 ? measured.length / seconds : 0,
    allRps: calls.length > 0 && last > first ? calls.length / ((last - first) / 1e6) : 0,
    p50Ms: percentileOfSorted(latencies, 50),
    p99Ms: percentileOfSorted(latencies, 99),
    failures: failures + badData,
    firstFailure,
  };
}
