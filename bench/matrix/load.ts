// The matrix's load: the requests of a cell written once to a file, then sent by wrk (HTTP/1.1,
// bench/wrk_check.lua reads the file and sends its requests in turn) or by the gRPC load generator
// (grpc_load/main.go, calls over HTTP/2: h2load repeats one body, and a write or delete of
// distinct ids needs another per call). Both check every answer: wrk its status, its size and
// (gRPC-Web) its trailer frame; the generator its gRPC status and its message's size.
import { pinned } from "../tools.ts";
import { runWrk } from "../wrk.ts";
import type { MatrixRequest, Wire } from "./requests.ts";

/** Writes requests in wrk_check.lua's format: "METHOD PATH BODY-LENGTH\n" and the body. */
export async function writeWrkRequests(path: string, requests: Iterable<MatrixRequest>) {
  await writeChunks(path, requests, (r) => {
    const body = r.body ?? new Uint8Array(0);
    return [new TextEncoder().encode(`${r.method} ${r.path} ${body.byteLength}\n`), body];
  });
}

/** Writes gRPC messages for grpc_load: each preceded by its length, 4 bytes big-endian. */
export async function writeGrpcMessages(path: string, requests: Iterable<MatrixRequest>) {
  await writeChunks(path, requests, (r) => {
    const body = r.body ?? new Uint8Array(0);
    const length = new Uint8Array(4);
    new DataView(length.buffer).setUint32(0, body.byteLength);
    return [length, body];
  });
}

async function writeChunks(
  path: string,
  requests: Iterable<MatrixRequest>,
  chunks: (r: MatrixRequest) => Uint8Array[],
) {
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  const writer = file.writable.getWriter();
  try {
    for (const r of requests) for (const chunk of chunks(r)) await writer.write(chunk);
  } finally {
    await writer.close();
  }
}

/** One run of load on a cell. */
export interface CellLoad {
  /** HTTP port's URL, or the gRPC listener's. */
  base: string;
  wire: Wire;
  /** The requests file (wrk's format, or grpc_load's for gRPC). */
  file: string;
  /** gRPC: the method's path (every call of a cell calls one method). */
  grpcMethod: string;
  /** Index of the first request to send; and whether to start again after the last. */
  start: number;
  wrap: boolean;
  /** Sizes a good answer may have (the HTTP body, or the gRPC message). */
  lengths: number[];
  /** gRPC-Web: a good body ends with this file's bytes (the OK trailer frame). */
  suffixFile?: string;
  /** Status of a good HTTP answer. */
  status: number;
  seconds: number;
  /** HTTP/1.1 connections; for gRPC, connections × streams. */
  connections: number;
  streams: number;
  cpus: string | undefined;
  /** The gRPC load generator's binary. */
  grpcLoad?: string;
}

/** What a run measured and found. */
export interface CellRun {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  failures: number;
  firstFailure: string;
  /** Requests taken from the file: where the next run starts. */
  generated: number;
}

/** Runs the load of one cell. */
export async function runCellLoad(load: CellLoad): Promise<CellRun> {
  if (!load.wire.grpc) {
    const r = await runWrk({
      url: `${load.base}/`,
      seconds: load.seconds,
      connections: load.connections,
      cpus: load.cpus,
      status: load.status,
      lengths: load.lengths,
      requestsFile: load.file,
      start: load.start,
      wrap: load.wrap,
      contentType: load.wire.contentType,
      headers: load.wire.headers,
      ...(load.suffixFile ? { suffixFile: load.suffixFile } : {}),
    });
    return { ...r, generated: r.generated };
  }
  const command = pinned(load.cpus, [load.grpcLoad!]);
  const out = await new Deno.Command(command[0]!, {
    args: command.slice(1),
    env: {
      TARGET: new URL(load.base).host,
      METHOD: load.grpcMethod,
      MESSAGES: load.file,
      START: String(load.start),
      WRAP: load.wrap ? "1" : "0",
      CONNECTIONS: String(load.connections),
      STREAMS: String(load.streams),
      SECONDS: String(load.seconds),
      LENGTHS: load.lengths.join(","),
      // One OS thread per client core, as wrk runs one.
      GOMAXPROCS: String(Math.max(1, cpuCount(load.cpus))),
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (out.code !== 0) {
    throw new Error(`grpc_load failed: ${text}${new TextDecoder().decode(out.stderr)}`);
  }
  return JSON.parse(text.trim().split("\n").at(-1)!) as CellRun;
}

/** CPUs in a taskset list such as "0", "0-1" or "0,2"; 1 when not pinned. */
function cpuCount(cpus: string | undefined): number {
  if (cpus === undefined) return 1;
  let n = 0;
  for (const part of cpus.split(",")) {
    const [a, b] = part.split("-").map(Number);
    n += b === undefined ? 1 : b! - a! + 1;
  }
  return n;
}
