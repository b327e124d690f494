import type { BenchContext } from "./contenders.ts";
import { runH2load } from "./h2load.ts";
import { memoryOf } from "./proc.ts";
import type { Contender, Finish, Measurement } from "./runner.ts";
import type { Service } from "./service.ts";

/** What sample calls with a real gRPC client found. */
export interface GrpcSample {
  calls: number;
  ok: number;
  failures: number;
  firstError: string;
  messageBytes: number;
  books: number;
  sha256: string;
}

const METHOD = "/books.v1.BooksService/books";
const CHECK = new URL("./peers/grpc_check.mjs", import.meta.url).pathname;

/** Makes `calls` concurrent calls with @grpc/grpc-js (on Node) and checks each grpc-status. */
export async function sampleGrpc(url: string, calls: number): Promise<GrpcSample> {
  const out = await new Deno.Command("node", {
    args: [CHECK],
    env: { URL: url, CALLS: String(calls) },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (out.code !== 0) {
    return {
      calls,
      ok: 0,
      failures: calls,
      firstError: `client failed: ${text}${new TextDecoder().decode(out.stderr)}`.slice(0, 300),
      messageBytes: 0,
      books: 0,
      sha256: "",
    };
  }
  return JSON.parse(text.trim().split("\n").at(-1)!);
}

/** Streams per HTTP/2 connection; connections × streams = the bench's concurrency. */
export const GRPC_STREAMS = 8;

/** Connections × concurrent streams of one h2load run. */
export interface GrpcShape {
  clients: number;
  streams: number;
}

const SAMPLE_CALLS = 200;
const MIN_CALLS = 1000;
const CRASH_GRACE_MS = 500;

/**
 * A gRPC server loaded by h2load with unary `books` calls. Each round runs one h2load of a fixed
 * number of calls (warm-up, then about one round's worth), so the DATA total can be checked
 * exactly. After the load, 200 calls with a real client must all end in grpc-status OK with the
 * full catalogue. A server process that dies is a failed check; its stderr is kept, and the next
 * step gets a fresh process.
 *
 * By default each round starts a fresh server process. With `reuse`, one process serves every
 * round, as a long-running server would, and its peak RSS is what all rounds left behind.
 */
export function grpcContender(spec: {
  ctx: BenchContext;
  name: string;
  role: Contender["role"];
  start: () => Promise<Service>;
  dataFile: string;
  expectedBooks: number;
  /** Shared between the contenders of one workload to compare their message bytes. */
  samples: Map<string, GrpcSample>;
  /** A log message announcing that a supervised gRPC listener process died and was restarted. */
  restartMarker?: string;
  /** Connections and streams; default BENCH_CONNECTIONS / 8 connections × 8 streams. */
  shape?: GrpcShape;
  /** One server process for every round instead of a fresh one per round. */
  reuse?: boolean;
}): Contender {
  const { ctx } = spec;
  let rate = 0;
  let responseBytes = 0;
  let calibrationFailures = 0;
  const crashes: string[] = [];
  const notes: string[] = [];
  const streams = spec.shape?.streams ?? GRPC_STREAMS;
  const clients = spec.shape?.clients ??
    Math.max(1, Math.round(ctx.opts.connections / GRPC_STREAMS));
  // The process serving every round when `reuse` is set.
  let kept: { service: Service; url: string; restarts: number } | undefined;
  // Every process this contender started and has not stopped: finish() stops what an error left.
  const live = new Set<Service>();

  async function server(): Promise<{ service: Service; url: string }> {
    const service = await spec.start();
    live.add(service);
    const url = service.listening.grpc;
    if (typeof url !== "string") {
      await service.stop();
      throw new Error(`${spec.name} printed no grpc URL`);
    }
    return { service, url };
  }

  /** Stops a server; one that already died (or dies within a grace period) is a crash. */
  async function retire(service: Service, when: string, counted = 0): Promise<boolean> {
    await new Promise((r) => setTimeout(r, CRASH_GRACE_MS));
    const died = !service.alive();
    if (died) crashes.push(`${when}: ${service.diagnosis().slice(0, 300)}`);
    countRestarts(service, when, counted);
    const code = await service.stop();
    live.delete(service);
    if (!died && code !== 0) {
      crashes.push(`on SIGTERM ${when}: ${service.diagnosis().slice(0, 300)}`);
    }
    return died;
  }

  /** Records the listener restarts the log reports beyond the `counted` ones; returns all. */
  function countRestarts(service: Service, when: string, counted: number): number {
    const restarts = spec.restartMarker ? service.markerCount(spec.restartMarker) : 0;
    for (let i = counted; i < restarts; i++) {
      crashes.push(`${when}: the log says "${spec.restartMarker}"`);
    }
    return restarts;
  }

  /** Sample calls with a real client; on a dead server, a fresh one answers them. */
  async function sample(service: Service, url: string, when: string): Promise<number> {
    let target = { service, url };
    await new Promise((r) => setTimeout(r, CRASH_GRACE_MS));
    if (!service.alive()) {
      await retire(service, `after the load (${when})`);
      target = await server();
    }
    const s = await sampleGrpc(target.url, SAMPLE_CALLS);
    if (!spec.samples.has(spec.name) && s.failures === 0) spec.samples.set(spec.name, s);
    await retire(target.service, `after the sample calls (${when})`);
    if (s.failures > 0) {
      notes.push(`${when}: ${s.failures} of ${s.calls} sample calls failed: ${s.firstError}`);
    } else if (s.books !== spec.expectedBooks) {
      notes.push(`${when}: ${s.books} books, expected ${spec.expectedBooks}`);
      return 1;
    }
    return s.failures;
  }

  function load(url: string, requests: number, warmupSeconds: number) {
    return runH2load({
      requests,
      warmupSeconds,
      url: `${url}${METHOD}`,
      clients,
      streams,
      cpus: ctx.tools.clientCpus,
      dataFile: spec.dataFile,
      responseBytes,
      logFile: `${ctx.tmp}/h2load.log`,
    });
  }

  /** A round on the kept process; a process found dead is a crash and is replaced. */
  async function measureKept(round: number): Promise<Measurement> {
    const when = `round ${round + 1}`;
    if (!kept || !kept.service.alive()) {
      if (kept) await retire(kept.service, `before ${when}`, kept.restarts);
      kept = { ...await server(), restarts: 0 };
    }
    const { service, url } = kept;
    const seconds = ctx.opts.warmup + ctx.opts.duration;
    let cpu = await service.cpuSeconds();
    let r = await load(url, Math.max(MIN_CALLS, Math.round(rate * seconds)), ctx.opts.warmup);
    if (r.requests === 0 && r.allRps > rate && service.alive()) {
      // Every call ended within the warm-up: the rate learnt from a cold server was too low.
      // Sized again from this run, the round is run once more.
      rate = r.allRps;
      cpu = await service.cpuSeconds();
      r = await load(url, Math.max(MIN_CALLS, Math.round(rate * seconds)), ctx.opts.warmup);
    }
    const cpuUsPerRequest = (await service.cpuSeconds() - cpu) * 1e6 / r.calls;
    await new Promise((resolve) => setTimeout(resolve, CRASH_GRACE_MS));
    const memory = memoryOf(await service.peakMemory());
    let bad = 0;
    if (!service.alive()) {
      await retire(service, `after the load (${when})`, kept.restarts);
      kept = undefined;
    } else {
      const s = await sampleGrpc(url, SAMPLE_CALLS);
      if (!spec.samples.has(spec.name) && s.failures === 0) spec.samples.set(spec.name, s);
      if (s.failures > 0) {
        notes.push(`${when}: ${s.failures} of ${s.calls} sample calls failed: ${s.firstError}`);
        bad = s.failures;
      } else if (s.books !== spec.expectedBooks) {
        notes.push(`${when}: ${s.books} books, expected ${spec.expectedBooks}`);
        bad = 1;
      }
      kept.restarts = countRestarts(service, when, kept.restarts);
    }
    if (r.failures === 0 && r.rps > 0) rate = r.rps;
    return { ...r, failures: r.failures + bad, ...memory, cpuUsPerRequest };
  }

  return {
    name: spec.name,
    role: spec.role,
    async prepare() {
      // Learn the response size from a real client, then the call rate from a short load.
      const first = await server();
      const s = await sampleGrpc(first.url, SAMPLE_CALLS);
      await retire(first.service, "after the first sample calls");
      if (s.failures > 0 || s.books !== spec.expectedBooks) {
        throw new Error(`${spec.name}: sample calls failed: ${s.firstError || `${s.books} books`}`);
      }
      spec.samples.set(spec.name, s);
      responseBytes = s.messageBytes + 5;
      const probe = await server();
      let r = await load(probe.url, MIN_CALLS, 0);
      if (spec.reuse && r.failures === 0 && r.rps > 0) {
        // Warm the kept process up for as long as a fresh one is warmed up in each round.
        r = await load(probe.url, Math.max(MIN_CALLS, Math.round(r.rps * ctx.opts.warmup)), 0);
      }
      if (spec.reuse && probe.service.alive()) kept = { ...probe, restarts: 0 };
      else await retire(probe.service, "after the calibration load");
      if (r.failures > 0) {
        calibrationFailures = r.failures;
        notes.push(`calibration load: ${r.firstFailure}`);
      }
      rate = r.rps > 0 ? r.rps : MIN_CALLS;
    },
    async measure(round): Promise<Measurement> {
      if (spec.reuse) return await measureKept(round);
      let { service, url } = await server();
      const seconds = ctx.opts.warmup + ctx.opts.duration;
      let cpu = await service.cpuSeconds();
      let r = await load(url, Math.max(MIN_CALLS, Math.round(rate * seconds)), ctx.opts.warmup);
      if (r.requests === 0 && r.allRps > rate && service.alive()) {
        // Every call ended within the warm-up: the rate learnt from a cold server was too low.
        // Sized again from this run, the round runs once more on a fresh process.
        rate = r.allRps;
        await retire(service, `round ${round + 1}, before sizing again`);
        ({ service, url } = await server());
        cpu = await service.cpuSeconds();
        r = await load(url, Math.max(MIN_CALLS, Math.round(rate * seconds)), ctx.opts.warmup);
      }
      const cpuUsPerRequest = (await service.cpuSeconds() - cpu) * 1e6 / r.calls;
      const memory = memoryOf(await service.peakMemory());
      const bad = await sample(service, url, `round ${round + 1}`);
      if (r.failures === 0 && r.rps > 0) rate = r.rps;
      return { ...r, failures: r.failures + bad, ...memory, cpuUsPerRequest };
    },
    async finish(): Promise<Finish> {
      if (kept) await retire(kept.service, "at the end", kept.restarts);
      kept = undefined;
      for (const service of live) await service.stop("SIGKILL");
      const mine = spec.samples.get(spec.name);
      for (const [other, s] of spec.samples) {
        if (other !== spec.name && mine && s.sha256 !== mine.sha256) {
          notes.push(
            `message differs from ${other}'s: ${mine.messageBytes} vs ${s.messageBytes} B`,
          );
        }
      }
      if (crashes.length > 0) {
        notes.push(`the gRPC server died ${crashes.length} times: ${crashes[0]}`);
      }
      return { peakRssMiB: NaN, failures: crashes.length + calibrationFailures, notes };
    },
  };
}
