// Issue 31's "which style" rows: one address-book operation over REST, GraphQL, gRPC and Connect
// against this server, side by side in one run, with CPU per request and bytes on the wire.
// REST, GraphQL and Connect (binary protobuf) go over HTTP/1.1 to the HTTP port with wrk; gRPC
// over HTTP/2 cleartext to the gRPC listener with h2load. Requests: bench/style_requests.ts.
import { ADDRESS_FIELD_NAMES, type AddressInput, sameAddress } from "../lib/address.ts";
import { listedIds } from "./addresses_contenders.ts";
import type { BenchContext } from "./contenders.ts";
import { GRPC_STREAMS } from "./grpc_contenders.ts";
import { runH2load } from "./h2load.ts";
import { GRPC_RESTART, grpcUrlOf, httpUrlOf, startOurs } from "./ours.ts";
import { memoryOf } from "./proc.ts";
import type { Contender, Measurement, Workload } from "./runner.ts";
import { copyKv, seedAddresses, SEEDING } from "./seed_addresses.ts";
import type { Service } from "./service.ts";
import {
  framed,
  graphqlMeaning,
  grpcCall,
  type Meaning,
  type Operation,
  protoMeaning,
  READ_ID,
  restMeaning,
  SEEDED_FOR_STYLES,
  type Style,
  styleRequest,
  STYLES,
} from "./style_requests.ts";
import { type WireBytes, wireBytes } from "./wire_bytes.ts";
import { runWrk } from "./wrk.ts";

/** Calls of the gRPC calibration, and of the wire-bytes count of each style (gRPC). */
const MIN_CALLS = 1000;
const WIRE_CALLS = 500;

/** What a style's answers must be: wrk's body sizes, or the DATA bytes of one gRPC call. */
interface Expected {
  lengths: number[];
  grpcBytes: number | { min: number; max: number };
}

const ETAG = /^"[0-9a-f]{20}"$/;
const varintLength = (n: number) => Math.max(1, Math.ceil(Math.log2(n + 1) / 7));

/** The fields and etag of each address, in one order, to compare answers across styles. */
function canonical(m: Meaning): string {
  const rows = m.addresses.map((a) => [a.id, ...ADDRESS_FIELD_NAMES.map((n) => a[n]), a.etag]);
  return JSON.stringify({ rows, next: m.next ?? null });
}

/**
 * One request through the style's own client, its meaning checked (a read: equal to REST's, with
 * the etags REST answers; a create: the address sent, a new id, an etag), and the sizes every
 * answer of the load must have: a read's exactly this one's, a create's this one's with any id.
 */
async function learn(op: Operation, style: Style, server: Service): Promise<Expected> {
  const base = httpUrlOf(server);
  const request = styleRequest(op, style);
  let meaning: Meaning;
  let size: number;
  if (style === "gRPC") {
    const message = await grpcCall(grpcUrlOf(server)!, op);
    meaning = protoMeaning(op, message);
    size = 5 + message.byteLength;
  } else {
    const res = await fetch(`${base}${request.path}`, {
      method: request.method,
      ...(request.body ? { body: request.body } : {}),
      headers: { "content-type": request.contentType ?? "application/json" },
    });
    const bytes = new Uint8Array(await res.arrayBuffer());
    if (res.status !== request.status) {
      throw new Error(`${style} ${op} answered ${res.status}: ${decode(bytes)}`);
    }
    size = bytes.byteLength;
    meaning = style === "Connect"
      ? protoMeaning(op, bytes)
      : style === "GraphQL"
      ? graphqlMeaning(op, decode(bytes))
      : await restMeaning(base, op, bytes, res.headers.get("etag"));
  }
  if (op === "create") {
    const [a] = meaning.addresses;
    const sent = styleRequest(op, "REST").body!;
    const id = a?.id ?? 0;
    const sentInput = JSON.parse(decode(sent)) as AddressInput;
    if (!(id > 0) || !ETAG.test(a?.etag ?? "") || !sameAddress(a!, sentInput)) {
      throw new Error(`${style} create answered ${canonical(meaning)}`);
    }
    // Only the id's length varies: as decimal digits (JSON), or as a varint (protobuf).
    const binary = style === "gRPC" || style === "Connect";
    const fixed = size - (binary ? varintLength(id) : String(id).length);
    const lengths = Array.from({ length: binary ? 8 : 16 }, (_, i) => fixed + i + 1);
    return { lengths, grpcBytes: { min: lengths[0]!, max: lengths.at(-1)! } };
  }
  const rest = styleRequest(op, "REST");
  const reference = await fetch(`${base}${rest.path}`);
  const restBytes = new Uint8Array(await reference.arrayBuffer());
  const expected = await restMeaning(base, op, restBytes, reference.headers.get("etag"));
  if (canonical(meaning) !== canonical(expected)) {
    throw new Error(`${style} ${op} differs from REST: ${canonical(meaning).slice(0, 300)}`);
  }
  return { lengths: [size], grpcBytes: size };
}

function decode(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}

/** One style of one operation, checked on every answer. */
function styleContender(
  ctx: BenchContext,
  op: Operation,
  style: Style,
  seededCopy: () => Promise<string>,
): Contender {
  const place = { root: ctx.root, serverCpus: ctx.tools.serverCpus };
  const request = styleRequest(op, style);
  const grpc = style === "gRPC";
  const clients = Math.max(1, Math.round(ctx.opts.connections / GRPC_STREAMS));
  const files = `${ctx.tmp}/style-${op}-${style}`;
  let expected: Expected = { lengths: [], grpcBytes: 0 };
  let rate = MIN_CALLS;
  let wire: WireBytes | undefined;
  // Reads keep one server for every round; creates start one per round on a fresh KV file.
  let kept: Service | undefined;
  const live = new Set<Service>();
  // Failed checks before the rounds (a gRPC listener that died under the warm-up: it is
  // restarted and the run goes on, the failure counted), and listener deaths already counted.
  let early = 0;
  const notes: string[] = [];
  const deaths = new Map<Service, number>();

  /** Counts the listener deaths the log reports since the last look, as failures. */
  function newDeaths(service: Service): number {
    const seen = service.markerCount(GRPC_RESTART);
    const before = deaths.get(service) ?? 0;
    deaths.set(service, seen);
    return seen - before;
  }

  /** Records the failed checks of a run before the rounds. */
  function noteEarly(what: string, r: { failures: number; firstFailure: string }, s: Service) {
    const died = newDeaths(s);
    if (r.failures === 0 && died === 0) return;
    early += r.failures + died;
    notes.push(`${what}: ${r.firstFailure}${died ? `; the log says "${GRPC_RESTART}"` : ""}`);
  }

  async function start(): Promise<Service> {
    const kvDir = op === "create"
      ? await Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-style-" })
      : await seededCopy();
    const service = await startOurs(place, {
      kvDir,
      name: `ours (${style})`,
      markers: [GRPC_RESTART],
    });
    live.add(service);
    return service;
  }

  async function stop(service: Service): Promise<void> {
    live.delete(service);
    await service.stop();
  }

  /** wrk against the HTTP port, or h2load with a fixed number of calls against the gRPC port. */
  async function load(base: string, seconds: number, connections?: number) {
    if (!grpc) {
      const r = await runWrk({
        url: `${base}${request.path}`,
        seconds,
        connections: connections ?? ctx.opts.connections,
        cpus: ctx.tools.clientCpus,
        status: request.status,
        lengths: expected.lengths,
        method: request.method,
        ...(request.body ? { bodyFile: `${files}.body`, contentType: request.contentType } : {}),
      });
      return { ...r, calls: r.requests };
    }
    const calls = connections === undefined
      ? Math.max(MIN_CALLS, Math.round(rate * seconds))
      : WIRE_CALLS;
    return await runH2load({
      url: `${base}${request.path}`,
      requests: calls,
      warmupSeconds: 0,
      clients: connections ?? clients,
      streams: connections === undefined ? GRPC_STREAMS : 1,
      cpus: ctx.tools.clientCpus,
      dataFile: `${files}.grpc`,
      responseBytes: expected.grpcBytes,
      logFile: `${files}.h2load.log`,
    });
  }

  const baseOf = (s: Service) => (grpc ? grpcUrlOf(s)! : httpUrlOf(s));

  return {
    name: style,
    role: style === "REST" ? "ours" : "info",
    async prepare() {
      if (request.body) await Deno.writeFile(`${files}.body`, request.body);
      if (grpc) await Deno.writeFile(`${files}.grpc`, framed(request.body!));
      const server = await start();
      expected = await learn(op, style, server);
      // One connection, one request at a time, through a counting relay.
      wire = await wireBytes(baseOf(server), async (relay) => {
        const r = await load(relay, 1, 1);
        noteEarly("wire bytes", r, server);
        return r.calls;
      });
      if (grpc) {
        // The call rate, to size each round's fixed number of calls.
        const calibration = await load(baseOf(server), 0);
        noteEarly("calibration", calibration, server);
        if (calibration.failures === 0 && calibration.rps > 0) rate = calibration.rps;
      }
      if (op === "create") {
        // Each round warms a fresh server up itself.
        await stop(server);
        return;
      }
      noteEarly("warm-up", await load(baseOf(server), ctx.opts.warmup), server);
      kept = server;
    },
    async measure(round): Promise<Measurement> {
      const server = kept ?? await start();
      const base = baseOf(server);
      const fresh = kept === undefined;
      let warmCalls = 0;
      let failures = 0;
      let firstFailure = "";
      if (fresh) {
        // A fresh server is warmed up, checked but not measured.
        const warm = await load(base, ctx.opts.warmup);
        warmCalls = warm.calls;
        failures += warm.failures;
        firstFailure = warm.firstFailure;
      }
      const cpu = await server.cpuSeconds();
      const r = await load(base, ctx.opts.duration);
      const cpuUsPerRequest = (await server.cpuSeconds() - cpu) * 1e6 / r.calls;
      failures += r.failures;
      firstFailure ||= r.firstFailure;
      if (r.calls === 0) {
        failures++;
        firstFailure ||= "no request was answered in the measured run";
      }
      if (grpc && r.failures === 0 && r.rps > 0) rate = r.rps;
      const died = newDeaths(server);
      if (died > 0) {
        failures += died;
        firstFailure ||= `the log says "${GRPC_RESTART}"`;
      }
      const memory = fresh ? memoryOf(await server.peakMemory()) : {};
      const roundNotes: string[] = [];
      if (op === "create") {
        // Every create answered was stored; wrk may leave one in flight per connection at each end.
        const answered = warmCalls + r.calls;
        const stored = (await listedIds(httpUrlOf(server))).size;
        const slack = grpc ? 0 : 2 * ctx.opts.connections;
        if (stored < answered || stored > answered + slack) {
          failures++;
          firstFailure ||= `${answered} creations answered, ${stored} stored`;
        }
        roundNotes.push(`round ${round + 1}: ${answered} creations answered, ${stored} stored`);
        await stop(server);
      }
      return { ...r, failures, firstFailure, cpuUsPerRequest, ...memory, notes: roundNotes };
    },
    async finish() {
      const memory = kept ? memoryOf(await kept.peakMemory()) : { peakRssMiB: NaN };
      for (const service of live) await service.stop();
      live.clear();
      return { ...memory, failures: early, notes, ...(wire ? { wire } : {}) };
    },
  };
}

const TITLES: Record<Operation, string> = {
  "create": "Which style: create an address (fresh KV file each round)",
  "get": `Which style: read an address by id (${SEEDED_FOR_STYLES.toLocaleString("en-US")} seeded)`,
  "page-50": "Which style: the first page of 50 addresses",
};

/** The three "which style" workloads: `style-create`, `style-get`, `style-page-50`. */
export function buildStyleWorkloads(ctx: BenchContext): Workload[] {
  let seeding: Promise<string> | undefined;
  const seeded = () =>
    seeding ??= (async () => {
      const dir = await Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-style-seed-" });
      await seedAddresses(`${dir}/kv.sqlite3`, SEEDED_FOR_STYLES);
      return `${dir}/kv.sqlite3`;
    })();
  const seededCopy = async () => {
    const dir = await Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-style-" });
    await copyKv(await seeded(), dir);
    return dir;
  };
  const clients = Math.max(1, Math.round(ctx.opts.connections / GRPC_STREAMS));
  const styles = STYLES.filter((s) => s !== "gRPC" || ctx.tools.h2load);
  return (["create", "get", "page-50"] as const).map((op) => ({
    id: `style-${op}`,
    title: TITLES[op],
    load: `REST, GraphQL (the typed documents) and Connect (binary protobuf) on the HTTP port: ` +
      `wrk, ${ctx.opts.connections} connections, HTTP/1.1 keep-alive; gRPC on the gRPC ` +
      `listener: h2load, ${clients} connections × ${GRPC_STREAMS} streams, HTTP/2 cleartext; ` +
      (op === "create"
        ? "each round a fresh server on a fresh KV file"
        : `${op === "get" ? `id ${READ_ID}` : "limit 50"} of ${SEEDED_FOR_STYLES} addresses ` +
          "seeded once, each style's server on its own copy, kept for all rounds") +
      "; auth off, as `deno task start` runs it",
    checks: "before the load, one request through each style's own client (gRPC: Connect-ES " +
      "over node:http2), its answer equal to REST's with REST's ETags (a create: the address " +
      "sent, a new id, an etag); every response of the load: the status and the body size " +
      "(wrk Lua hook), or for gRPC the exact DATA bytes of the calls (h2load)" +
      (op === "create"
        ? "; after each round every creation answered is listed by GET /addresses (wrk may " +
          "leave one in flight per connection)"
        : "") +
      "; wire bytes: one connection, one request at a time, counted by a relay (1 s of wrk, " +
      `or ${WIRE_CALLS} gRPC calls), headers and framing included`,
    contenders: styles.map((style) => styleContender(ctx, op, style, seededCopy)),
    targets: [],
    reference: "REST",
    notes: [
      ...(styles.includes("gRPC") ? [] : ["gRPC left out: h2load is not installed"]),
      ...(op === "create" ? [] : [`seeded through ${SEEDING}`]),
    ],
  }));
}
