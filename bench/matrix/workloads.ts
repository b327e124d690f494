// The operation × framing matrix (issue 34): every address operation (create, read by id, a page
// of 50, replace, update, delete) in every framing (REST, GraphQL, Connect and gRPC-Web on the
// HTTP port, gRPC on the gRPC listener), one workload per cell (`matrix-<operation>-<framing>`),
// this server against the runtime's ceiling doing the same KV operations in the same framing, in
// alternating rounds; a write in a framing other than REST also against the same write over
// REST on this server.
import { V1_KEPT } from "../../lib/address.ts";
import type { BenchContext } from "../contenders.ts";
import { GRPC_STREAMS } from "../grpc_contenders.ts";
import { buildGrpcGo, findGoToolchain } from "../grpc_go.ts";
import { GRPC_RESTART, startOurs } from "../ours.ts";
import {
  type CeilingHeaders,
  STACK_FLOORS,
  startBareHttp2AddressBook,
  startRawKvAddressBook,
  startStackFloor,
} from "../peer_services.ts";
import type { Target, Workload } from "../runner.ts";
import { copyKv, seedAddresses, SEEDING } from "../seed_addresses.ts";
import type { Service } from "../service.ts";
import { cellContender, type CellRequests } from "./cell_contender.ts";
import { idsOfEachSize, type Learned, type Sample } from "./learn.ts";
import { writeGrpcMessages, writeWrkRequests } from "./load.ts";
import {
  type Framing,
  FRAMINGS,
  type MatrixRequest,
  type Operation,
  OPERATION_TITLES,
  OPERATIONS,
  requestOf,
  slugOf,
  type Variant,
  wireOf,
  WRITES,
} from "./requests.ts";

/** Addresses every cell but delete starts with (one owner, auth off), as in issue 34's runs. */
export const MATRIX_SEEDED = 20_000;

/**
 * The most deletes per second a delete cell is seeded for: each round of a delete cell runs on a
 * fresh copy of a file of this many × (warm-up + duration) addresses; a faster server runs out of
 * ids, which fails the round's checks and says so.
 */
export const DELETES_PER_SECOND = 12_000;

/** The contenders a target refers to. */
export const RAW_KV_BOOK = "raw Deno.serve on KV";
export const BARE_KV_BOOK = "bare node:http2 on KV";
export const OURS_REST = "ours over REST";

/** Issue 34's targets. */
const READ_MIN = 0.8;
const GRAPHQL_PAGE_MIN = 0.7;
const READ_P99_MAX = 2;
const WRITE_MIN = 0.8;

/** Headers of the connection or the encoding, not of the answer: not copied. */
const HOP = new Set([
  "date",
  "content-length",
  "content-encoding",
  "transfer-encoding",
  "connection",
  "keep-alive",
]);
/** Headers whose value differs per answer: the ceiling computes its own. */
const PER_ANSWER = new Set(["etag", "location", "x-request-id"]);

/** The headers the ceiling sends for a cell: this server's, as it answered the samples. */
function ceilingHeaders(headers: Headers): CeilingHeaders {
  const out: CeilingHeaders = { static: {}, dynamic: [] };
  for (const [name, value] of headers) {
    if (PER_ANSWER.has(name)) out.dynamic.push(name);
    else if (!HOP.has(name)) out.static[name] = value;
  }
  return out;
}

/** The requests of a cell and the samples checked before its load. */
function planOf(op: Operation, deletes: number) {
  const ids = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
  const one: Sample[] = [{ id: 0, variant: "A" }];
  switch (op) {
    case "create":
    case "page":
      return { entries: one, wrap: true, samples: one };
    case "read":
      return {
        entries: ids(MATRIX_SEEDED).map((id) => ({ id, variant: "A" as Variant })),
        wrap: true,
        samples: idsOfEachSize(MATRIX_SEEDED).map((id) => ({ id, variant: "A" as Variant })),
      };
    case "replace":
    case "update":
      return {
        // A pass over the ids writes B over the seeded A, the next one A again, and so on.
        entries: (["B", "A"] as const).flatMap((variant) =>
          ids(MATRIX_SEEDED).map((id) => ({ id, variant }))
        ),
        wrap: true,
        samples: idsOfEachSize(MATRIX_SEEDED).map((id) => ({ id, variant: "A" as Variant })),
      };
    case "delete": {
      const samples = idsOfEachSize(deletes).map((id) => ({ id, variant: "A" as Variant }));
      const sampled = new Set(samples.map((s) => s.id));
      return {
        entries: ids(deletes).filter((id) => !sampled.has(id)).map((id) => ({
          id,
          variant: "A" as Variant,
        })),
        wrap: false,
        samples,
      };
    }
  }
}

/** The matrix's workloads, `matrix-<operation>-<framing>`. */
export async function buildMatrixWorkloads(ctx: BenchContext): Promise<Workload[]> {
  const place = { root: ctx.root, serverCpus: ctx.tools.serverCpus };
  const deletes = Math.ceil(DELETES_PER_SECOND * (ctx.opts.warmup + ctx.opts.duration));
  const seeds = new Map<number, Promise<string>>();
  const seeded = (count: number) => {
    let seed = seeds.get(count);
    if (!seed) {
      seeds.set(
        count,
        seed = (async () => {
          const dir = await Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-matrix-seed-" });
          await seedAddresses(`${dir}/kv.sqlite3`, count);
          return `${dir}/kv.sqlite3`;
        })(),
      );
    }
    return seed;
  };
  const copies = new Map<Service, string>();
  const copy = async (op: Operation) => {
    const dir = await Deno.makeTempDir({ dir: ctx.tmp, prefix: `kv-matrix-${op}-` });
    await copyKv(await seeded(op === "delete" ? deletes : MATRIX_SEEDED), dir);
    return dir;
  };
  const discard = async (service: Service) => {
    const dir = copies.get(service);
    copies.delete(service);
    if (dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
  };

  // A server started on its own copy of the operation's seeded file, removed by `discard`.
  const onCopy = (op: Operation, start: (kvDir: string) => Promise<Service>) => async () => {
    const kvDir = await copy(op);
    const service = await start(kvDir);
    copies.set(service, kvDir);
    return service;
  };

  const files = new Map<string, Promise<CellRequests>>();
  const requestsOf = (op: Operation, framing: Framing) => {
    const key = `${op}-${slugOf(framing)}`;
    let made = files.get(key);
    if (!made) {
      files.set(
        key,
        made = (async () => {
          const plan = planOf(op, deletes);
          const grpc = wireOf(framing, op).grpc;
          const file = `${ctx.tmp}/matrix-${key}.${grpc ? "messages" : "requests"}`;
          const requests = function* (): Generator<MatrixRequest> {
            for (const e of plan.entries) yield requestOf(op, framing, e.id, e.variant);
          };
          await (grpc ? writeGrpcMessages : writeWrkRequests)(file, requests());
          return { file, wrap: plan.wrap, samples: plan.samples };
        })(),
      );
    }
    return made;
  };

  const go = await findGoToolchain();
  let grpcLoad: Promise<string> | undefined;
  const grpcLoadBinary = () => {
    if ("missing" in go) throw new Error(go.missing);
    return grpcLoad ??= buildGrpcGo(go, ctx.tmp, "grpc_load");
  };

  const ours = (op: Operation, framing: Framing, name: string, role: "ours" | "peer") => {
    let learnt: (l: Learned) => void = () => {};
    const headers = new Promise<CeilingHeaders>((resolve) => {
      learnt = (l) => resolve(ceilingHeaders(l.headers));
    });
    const contender = cellContender({
      ctx,
      name,
      role,
      op,
      framing,
      ours: true,
      start: onCopy(op, (kvDir) =>
        startOurs(place, {
          kvDir,
          name: `ours (${framing} ${op})`,
          defaultQuota: true,
          markers: [GRPC_RESTART],
        })),
      discard,
      requests: () => requestsOf(op, framing),
      learnt,
      ...(wireOf(framing, op).grpc ? { grpcLoad: grpcLoadBinary } : {}),
    });
    return { contender, headers };
  };

  const ceiling = (op: Operation, framing: Framing, headers: Promise<CeilingHeaders>) => {
    const grpc = wireOf(framing, op).grpc;
    return cellContender({
      ctx,
      name: grpc ? BARE_KV_BOOK : RAW_KV_BOOK,
      role: "ceiling",
      op,
      framing,
      ours: false,
      start: onCopy(op, async (kvDir) => {
        const kvPath = `${kvDir}/kv.sqlite3`;
        return grpc
          ? await startBareHttp2AddressBook(place, kvPath, V1_KEPT)
          : await startRawKvAddressBook(place, kvPath, await headers, V1_KEPT);
      }),
      discard,
      requests: () => requestsOf(op, framing),
      ...(grpc ? { grpcLoad: grpcLoadBinary } : {}),
    });
  };

  // The library a framing is built on, alone (STACK_FLOORS), for the read by id: what the
  // library costs over the ceiling, and this server over the library.
  const stackFloor = (framing: Framing, headers: Promise<CeilingHeaders>) => {
    const floor = floorOf(framing);
    return cellContender({
      ctx,
      name: STACK_FLOORS[floor].name,
      role: "peer",
      op: "read",
      framing,
      ours: false,
      start: onCopy(
        "read",
        async (kvDir) => startStackFloor(place, floor, `${kvDir}/kv.sqlite3`, await headers),
      ),
      discard,
      requests: () => requestsOf("read", framing),
    });
  };

  const clients = Math.max(1, Math.round(ctx.opts.connections / GRPC_STREAMS));
  const workloads: Workload[] = [];
  for (const op of OPERATIONS) {
    for (const framing of FRAMINGS) {
      const grpc = wireOf(framing, op).grpc;
      const write = WRITES.includes(op);
      const mine = ours(op, framing, "ours", "ours");
      const top = ceiling(op, framing, mine.headers);
      const rest = write && framing !== "REST"
        ? [ours(op, "REST", OURS_REST, "peer").contender]
        : [];
      const floor = op === "read" && framing !== "gRPC" ? [stackFloor(framing, mine.headers)] : [];
      const against = grpc ? BARE_KV_BOOK : RAW_KV_BOOK;
      const targets: Target[] = write
        ? (framing === "REST" ? [] : [{ against: OURS_REST, min: WRITE_MIN }])
        : [
          { against, min: op === "page" && framing === "GraphQL" ? GRAPHQL_PAGE_MIN : READ_MIN },
          { measure: "p99", against, max: READ_P99_MAX },
        ];
      const workload: Workload = {
        id: `matrix-${op}-${slugOf(framing)}`,
        title: `Matrix: ${OPERATION_TITLES[op]}, ${framing}` +
          (grpc ? " (gRPC listener)" : framing === "REST" ? "" : " (HTTP port)"),
        load: (grpc
          ? `the gRPC load generator (bench/matrix/grpc_load), ${clients} connections × ` +
            `${GRPC_STREAMS} streams, HTTP/2 cleartext`
          : `wrk, ${ctx.opts.connections} connections, HTTP/1.1 keep-alive`) +
          `; ${loadOf(op, deletes)}` +
          (rest.length > 0 ? `; ${OURS_REST}: the same write over REST, wrk` : "") +
          (floor.length > 0
            ? `; ${floor[0]!.name}: the library this framing is built on, alone, doing the ` +
              `ceiling's read with the same headers (bench/peers/${
                STACK_FLOORS[floorOf(framing)].file
              }), wrk`
            : ""),
        checks: CHECKS + (op === "delete" ? DELETE_CHECKS : ""),
        contenders: [mine.contender, top, ...rest, ...floor],
        targets,
        notes: [
          `seeded with ${
            (op === "delete" ? deletes : MATRIX_SEEDED).toLocaleString("en-US")
          } addresses through ${SEEDING}`,
        ],
      };
      if (grpc && "missing" in go) {
        workload.skipped =
          `the gRPC load generator is built with Go and grpc-go's sources: ${go.missing}`;
      }
      workloads.push(workload);
    }
  }
  return workloads;
}

/** The library a framing of the HTTP port is built on (STACK_FLOORS). */
function floorOf(framing: Framing): keyof typeof STACK_FLOORS {
  return framing === "REST" || framing === "GraphQL" ? framing : "Connect";
}

const CHECKS = "before the load, through each contender: samples (one id of each size) checked " +
  "for what they mean (the address expected, every etag equal to what a read in the same " +
  "framing answers, and on this server to REST's ETag; a page: its 50 addresses and a next " +
  "page); then every answer of the load: its status and size (wrk Lua hook; a gRPC-Web body " +
  "also ending with the OK trailer), or for gRPC its grpc-status OK and its message's size";
const DELETE_CHECKS =
  "; a delete's sample is then not found, and a delete that finds its id gone " +
  "is 404 or NOT_FOUND, a failure";

function loadOf(op: Operation, deletes: number): string {
  switch (op) {
    case "create":
      return "the example address, new ids; one server for all rounds";
    case "read":
      return `cycling through the ${MATRIX_SEEDED.toLocaleString("en-US")} seeded ids; one ` +
        "server for all rounds";
    case "page":
      return "the first page of 50; one server for all rounds";
    case "replace":
    case "update":
      return `cycling through the ${MATRIX_SEEDED.toLocaleString("en-US")} seeded ids, each ` +
        "pass writing the other of two inputs (every write changes the address); one server " +
        "for all rounds";
    case "delete":
      return `each id once, from 1 up, of ${deletes.toLocaleString("en-US")} seeded; a fresh ` +
        "server on a fresh copy each round";
  }
}
