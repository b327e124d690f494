// One contender of a matrix cell: a server (this one, or a ceiling) doing one operation in one
// framing under load. It learns what every answer must be from checked samples (learn.ts), counts
// the bytes one request and its answer take on the wire, then is measured each round: req/s, p50
// and p99, and the server's CPU per operation. A delete uses every id once, so each of its rounds
// runs on a fresh server on a fresh copy of the seeded file; every other cell keeps one server for
// all rounds, its requests continuing where the last run stopped (a replace or update thus always
// changes the address: the first pass over the ids writes B over the seeded A, the next A, …).
import type { BenchContext } from "../contenders.ts";
import { GRPC_STREAMS } from "../grpc_contenders.ts";
import { GRPC_RESTART, grpcUrlOf, httpUrlOf } from "../ours.ts";
import { memoryOf } from "../proc.ts";
import type { Contender, Measurement } from "../runner.ts";
import type { Service } from "../service.ts";
import { type WireBytes, wireBytes } from "../wire_bytes.ts";
import { learn, type Learned, type Reach, type Sample } from "./learn.ts";
import { type CellLoad, type CellRun, runCellLoad } from "./load.ts";
import { type Framing, type Operation, rpcMethodOf, wireOf } from "./requests.ts";
import { AddressService } from "../../rpc/gen/addresses/v1/addresses_pb.ts";

/** The requests of one operation in one framing, written once for a cell's contenders. */
export interface CellRequests {
  /** The requests file (wrk_check.lua's format, or grpc_load's for gRPC). */
  file: string;
  /** Send the file again from its start once every request was sent (not a delete's). */
  wrap: boolean;
  /** Requests made before the load, checked; a delete's load leaves their ids out. */
  samples: readonly Sample[];
}

/** What a contender of a cell is. */
export interface CellContenderSpec {
  ctx: BenchContext;
  name: string;
  role: Contender["role"];
  op: Operation;
  framing: Framing;
  /** Starts the server on a fresh copy of the seeded KV file. */
  start: () => Promise<Service>;
  /** Removes what `start` copied, once its server stopped. */
  discard: (service: Service) => Promise<void>;
  requests: () => Promise<CellRequests>;
  /** This server: its answers are checked against its REST ETags and its log for crashes. */
  ours: boolean;
  /** Told what this contender learnt (this server's answers: the ceiling copies its headers). */
  learnt?: (learned: Learned) => void;
  /** The gRPC load generator's binary (gRPC cells). */
  grpcLoad?: () => Promise<string>;
}

/** A contender of a matrix cell. */
export function cellContender(spec: CellContenderSpec): Contender {
  const { ctx, op, framing } = spec;
  const wire = wireOf(framing, op);
  const fresh = op === "delete";
  const grpcMethod = `/${AddressService.typeName}/${rpcMethodOf(op).name}`;
  let learned: Learned | undefined;
  let requests: CellRequests | undefined;
  let suffixFile: string | undefined;
  let grpcLoad: string | undefined;
  let onWire: WireBytes | undefined;
  let kept: Service | undefined;
  let offset = 0;
  let early = 0;
  const notes: string[] = [];
  const live = new Set<Service>();
  const deaths = new Map<Service, number>();

  const baseOf = (s: Service) => (wire.grpc ? grpcUrlOf(s)! : httpUrlOf(s));
  const reach = (s: Service): Reach => ({
    base: baseOf(s),
    ...(spec.ours ? { restBase: httpUrlOf(s) } : {}),
  });

  async function start(): Promise<Service> {
    const service = await spec.start();
    live.add(service);
    if (wire.grpc && grpcUrlOf(service) === undefined) {
      throw new Error(`${spec.name} printed no grpc URL`);
    }
    return service;
  }

  async function stop(service: Service): Promise<void> {
    live.delete(service);
    await service.stop();
    await spec.discard(service);
  }

  /** Listener deaths the log reported since the last look (this server's only). */
  function newDeaths(service: Service): number {
    if (!spec.ours) return 0;
    const seen = service.markerCount(GRPC_RESTART);
    const before = deaths.get(service) ?? 0;
    deaths.set(service, seen);
    return seen - before;
  }

  /**
   * One run of load; a measured one (`measured`) in which nothing was answered fails (a warm-up
   * may see none on a stalled disk, and the round after it tells whether the server is alive).
   */
  async function load(
    base: string,
    seconds: number,
    { one = false, measured = false } = {},
  ): Promise<CellRun> {
    const run: CellLoad = {
      base,
      wire,
      file: requests!.file,
      grpcMethod,
      start: offset,
      wrap: requests!.wrap,
      lengths: learned!.lengths,
      ...(suffixFile ? { suffixFile } : {}),
      status: learned!.status,
      seconds,
      connections: one
        ? 1
        : wire.grpc
        ? Math.max(1, Math.round(ctx.opts.connections / GRPC_STREAMS))
        : ctx.opts.connections,
      streams: one ? 1 : GRPC_STREAMS,
      cpus: ctx.tools.clientCpus,
      ...(grpcLoad ? { grpcLoad } : {}),
    };
    const r = await runCellLoad(run);
    offset += r.generated;
    if (measured && r.requests === 0 && r.failures === 0) {
      return { ...r, failures: 1, firstFailure: "no request was answered" };
    }
    return r;
  }

  /** Counts failed checks of a run that is not measured (a warm-up, the wire bytes). */
  function noteEarly(what: string, r: { failures: number; firstFailure: string }, s: Service) {
    const died = newDeaths(s);
    if (r.failures === 0 && died === 0) return;
    early += r.failures + died;
    notes.push(`${what}: ${r.firstFailure}${died ? `; the log says "${GRPC_RESTART}"` : ""}`);
  }

  return {
    name: spec.name,
    role: spec.role,
    async prepare() {
      requests = await spec.requests();
      if (spec.grpcLoad) grpcLoad = await spec.grpcLoad();
      const server = await start();
      learned = await learn(op, framing, requests.samples, reach(server));
      spec.learnt?.(learned);
      if (learned.trailer) {
        suffixFile = `${requests.file}.${spec.role}.trailer`;
        await Deno.writeFile(suffixFile, learned.trailer);
      }
      // One connection, one request at a time, through a counting relay.
      onWire = await wireBytes(baseOf(server), async (relay) => {
        const r = await load(relay, 1, { one: true });
        noteEarly("wire bytes", r, server);
        return { sent: r.generated, answered: r.requests };
      }).catch((error) => {
        notes.push(`wire bytes not counted: ${error instanceof Error ? error.message : error}`);
        return undefined;
      });
      if (fresh) {
        await stop(server);
        return;
      }
      // Warmed right before each round, the first included.
      kept = server;
    },
    async warm() {
      // A fresh server (a delete's) is warmed in its round, after it starts.
      if (kept) noteEarly("warm-up", await load(baseOf(kept), ctx.opts.warmup), kept);
    },
    async measure(round): Promise<Measurement> {
      let failures = 0;
      let firstFailure = "";
      let server = kept;
      if (!server) {
        // A fresh server and the ids from the first again; its warm-up checked, not measured.
        server = await start();
        offset = 0;
        const warm = await load(baseOf(server), ctx.opts.warmup);
        failures += warm.failures;
        firstFailure = warm.firstFailure;
      }
      const cpu = await server.cpuSeconds();
      const r = await load(baseOf(server), ctx.opts.duration, { measured: true });
      const cpuUsPerRequest = (await server.cpuSeconds() - cpu) * 1e6 / r.requests;
      failures += r.failures;
      firstFailure ||= r.firstFailure;
      const died = newDeaths(server);
      if (died > 0) {
        failures += died;
        firstFailure ||= `the log says "${GRPC_RESTART}"`;
      }
      const memory = fresh ? memoryOf(await server.peakMemory()) : {};
      if (fresh) await stop(server);
      const roundNotes = fresh ? [`round ${round + 1}: ${offset} ids deleted or in flight`] : [];
      return { ...r, failures, firstFailure, cpuUsPerRequest, ...memory, notes: roundNotes };
    },
    async finish() {
      const memory = kept ? memoryOf(await kept.peakMemory()) : { peakRssMiB: NaN };
      for (const service of [...live]) await stop(service);
      kept = undefined;
      return { ...memory, failures: early, notes, ...(onWire ? { wire: onWire } : {}) };
    },
  };
}
