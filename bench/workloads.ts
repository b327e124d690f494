import {
  ADDRESS_INPUT,
  createdLengths,
  naiveKvContender,
  postAddressesContender,
} from "./addresses_contenders.ts";
import { buildCreatesWorkload } from "./address_quota.ts";
import { buildAddressReadWorkloads } from "./address_reads.ts";
import { type BenchContext, httpContender, type WrkLoad } from "./contenders.ts";
import { booksMessage } from "./books_message.ts";
import { GRPC_STREAMS, grpcContender, type GrpcSample, type GrpcShape } from "./grpc_contenders.ts";
import { buildGrpcGo, findGoToolchain, startGrpcGo } from "./grpc_go.ts";
import { GRPC_RESTART, startOurs } from "./ours.ts";
import {
  startBareHttp2,
  startGrpcJs,
  startHono,
  startRawDeno,
  startYoga,
  startZodOpenapiAnswers,
  writeRoutes,
} from "./peer_services.ts";
import { type Answer, BOOKS_QUERY, learnGraphql, type Reference, sameBodies } from "./reference.ts";
import type { Target, Workload } from "./runner.ts";
import { buildServeWorkloads } from "./serve_contenders.ts";
import { buildMatrixWorkloads } from "./matrix/workloads.ts";
import { baselineOf } from "./baseline.ts";

/** Names of the contenders, as targets refer to them. */
export const RAW = "raw Deno.serve";
export const RAW_SAME = "raw Deno.serve, same headers";
export const ZOD_OPENAPI_SAME = "@hono/zod-openapi alone, same headers";
export const YOGA = "graphql-yoga";
export const GRPC_JS = "@grpc/grpc-js (Node)";
export const NAIVE = "naive KV loop, 64 workers";
export const BARE_HTTP2 = "bare node:http2 on Deno";
export const HONO = "Hono app (request-id, logger, etag)";
export const GRPC_GO = "grpc-go (GOMAXPROCS=1)";

/** Issue 21: peak memory of ours in every workload, each page counted once (proc.ts). */
const MEMORY_TARGET: Target = { measure: "memory", max: 120 };

/** Headers the Hono app's request-id and etag middleware add: proof they ran. */
const HONO_HEADERS = ["etag", "x-request-id"];
const HTTP_CHECK = "every response: status and exact body size (wrk Lua hook)";
const HONO_CHECK = "; the Hono app's bodies checked equal to ours, byte for byte, and its " +
  "`ETag` and `X-Request-Id` present, before the load";

/** The workloads of `deno task bench`, built from what the server answered in the probe. */
export async function buildWorkloads(
  ctx: BenchContext,
  ref: Reference,
  booksFile: string,
): Promise<Workload[]> {
  const place = { root: ctx.root, serverCpus: ctx.tools.serverCpus };
  const ours = async () =>
    startOurs(place, { kvDir: await Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-" }) });
  const routes = new Map<string, Answer>([["GET /rest/books", ref.restBooks]]);
  for (const [path, body] of ref.bookBodies) routes.set(`GET ${path}`, body);
  if ("body" in ref.graphql) routes.set("POST /graphql", ref.graphql);
  const routesFile = `${ctx.tmp}/routes.json`;
  await writeRoutes(routesFile, routes);
  // Two ceilings: the leanest answer (content type only, which Deno.serve sends on a fast
  // path), and the same answer with every header this server sends.
  const ceilings = (path: string, load: WrkLoad) => [
    httpContender({
      ctx,
      name: RAW,
      role: "ceiling",
      start: () => startRawDeno(place, routesFile),
      path,
      load,
    }),
    httpContender({
      ctx,
      name: RAW_SAME,
      role: "ceiling",
      start: () => startRawDeno(place, routesFile, true),
      path,
      load,
    }),
  ];
  const bookCount = ref.bookBodies.size;
  const load = `wrk, ${ctx.opts.connections} connections, HTTP/1.1 keep-alive`;

  const baseline = await baselineOf(ctx, place.serverCpus, GRPC_RESTART);

  const restLoad = { status: 200, lengths: [ref.restBooks.body.byteLength] };
  const restBooks: Workload = {
    id: "rest-books",
    title: "GET /rest/books",
    load,
    checks: HTTP_CHECK + HONO_CHECK,
    contenders: [
      httpContender({
        ctx,
        name: "ours",
        role: "ours",
        start: ours,
        path: "/rest/books",
        load: restLoad,
      }),
      ...ceilings("/rest/books", restLoad),
      // What the framework alone costs over the same-headers ceiling: ours cannot beat it.
      httpContender({
        ctx,
        name: ZOD_OPENAPI_SAME,
        role: "info",
        start: () => startZodOpenapiAnswers(place, routesFile),
        path: "/rest/books",
        load: restLoad,
      }),
      // What the access log costs: the same server with no line per request.
      httpContender({
        ctx,
        name: "ours without the access log (LOG_LEVEL=warn)",
        role: "info",
        start: async () =>
          startOurs(place, {
            kvDir: await Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-" }),
            name: "ours without the access log",
            logLevel: "warn",
          }),
        path: "/rest/books",
        load: restLoad,
      }),
      ...baseline.http(
        "/rest/books",
        restLoad,
        sameBodies(new Map([["/rest/books", ref.restBooks]]), []),
      ),
      httpContender({
        ctx,
        name: HONO,
        role: "peer",
        start: () => startHono(place, booksFile),
        path: "/rest/books",
        load: restLoad,
        verify: sameBodies(new Map([["/rest/books", ref.restBooks]]), HONO_HEADERS),
        countLog: true,
      }),
    ],
    // Also against the ceiling that sends the same headers, which leaves only this server's work.
    targets: [{ against: RAW, min: 0.75 }, { against: RAW_SAME, min: 0.85 }],
  };

  const pathsFile = `${ctx.tmp}/book_paths.txt`;
  await Deno.writeTextFile(pathsFile, [...ref.bookBodies.keys()].join("\n") + "\n");
  const bookLoad = {
    status: 200,
    lengths: [...new Set([...ref.bookBodies.values()].map((b) => b.body.byteLength))],
    pathsFile,
  };
  const bookById: Workload = {
    id: "book-id",
    title: "GET /api/book/{id}",
    load: `${load}; cycling through all ${bookCount} ids`,
    checks: "every response: status 200 and a body size one of the books has (wrk Lua hook)" +
      HONO_CHECK + " (every id)",
    contenders: [
      httpContender({
        ctx,
        name: "ours",
        role: "ours",
        start: ours,
        path: "/api/book/1",
        load: bookLoad,
      }),
      ...ceilings("/api/book/1", bookLoad),
      ...baseline.http("/api/book/1", bookLoad, sameBodies(ref.bookBodies, [])),
      httpContender({
        ctx,
        name: HONO,
        role: "peer",
        start: () => startHono(place, booksFile),
        path: "/api/book/1",
        load: bookLoad,
        verify: sameBodies(ref.bookBodies, HONO_HEADERS),
        countLog: true,
      }),
    ],
    targets: [{ against: RAW, min: 0.7 }],
  };

  const queryFile = `${ctx.tmp}/graphql_query.json`;
  await Deno.writeTextFile(queryFile, JSON.stringify({ query: BOOKS_QUERY }));
  const graphql: Workload = {
    id: "graphql",
    title: "GraphQL books (all fields)",
    load: `${load}; POST /graphql ${BOOKS_QUERY}`,
    checks: `${HTTP_CHECK}; graphql-yoga's data checked equal to ours before the load`,
    contenders: [],
    targets: [{ against: RAW, min: 0.75 }],
  };
  if ("skipped" in ref.graphql) graphql.skipped = ref.graphql.skipped;
  else {
    const ourBody = ref.graphql.body;
    const gqlLoad = {
      status: 200,
      lengths: [ourBody.byteLength],
      method: "POST" as const,
      bodyFile: queryFile,
    };
    const sameData = async (_: unknown, url: string) => {
      const got = await learnGraphql(url.replace(/\/graphql$/, ""), bookCount);
      if ("skipped" in got) throw new Error(`${new URL(url).host}: ${got.skipped}`);
      const data = (b: Uint8Array) => JSON.stringify(JSON.parse(new TextDecoder().decode(b)).data);
      if (data(got.body) !== data(ourBody)) {
        throw new Error(`${new URL(url).host}: its data differs from ours`);
      }
      return { lengths: [got.body.byteLength] };
    };
    graphql.contenders = [
      httpContender({
        ctx,
        name: "ours",
        role: "ours",
        start: ours,
        path: "/graphql",
        load: gqlLoad,
      }),
      ...ceilings("/graphql", gqlLoad),
      ...baseline.http("/graphql", gqlLoad, sameData),
      httpContender({
        ctx,
        name: YOGA,
        role: "peer",
        start: () => startYoga(place, booksFile),
        path: "/graphql",
        load: gqlLoad,
        verify: sameData,
      }),
    ];
  }

  const grpcData = `${ctx.tmp}/books_request.grpc`;
  await Deno.writeFile(grpcData, new Uint8Array(5)); // uncompressed, empty BooksRequest
  // grpc-go answers with the message the other peers encode; built once, when first started.
  const goToolchain = await findGoToolchain();
  const grpcGoNotes = "missing" in goToolchain ? [`${GRPC_GO} left out: ${goToolchain.missing}`] : [
    `${GRPC_GO}: ${goToolchain.go}, grpc-go ${goToolchain.grpcGo}, default server options, ` +
    "a hand-written service description answering every call with the pre-encoded message",
  ];
  const messageFile = `${ctx.tmp}/books_response.pb`;
  let grpcGoBinary: Promise<string> | undefined;
  type GrpcPeerSpec = Omit<Parameters<typeof grpcContender>[0], "name" | "role" | "start">;
  const grpcGo = (spec: GrpcPeerSpec) => {
    if ("missing" in goToolchain) return [];
    const start = async () => {
      grpcGoBinary ??= (async () => {
        await Deno.writeFile(messageFile, await booksMessage(booksFile));
        return await buildGrpcGo(goToolchain, ctx.tmp);
      })();
      return startGrpcGo(place, await grpcGoBinary, messageFile);
    };
    return [grpcContender({ ...spec, name: GRPC_GO, role: "peer", start })];
  };
  const samples = new Map<string, GrpcSample>();
  const grpcSpec = { ctx, dataFile: grpcData, expectedBooks: bookCount, samples };
  const clients = Math.max(1, Math.round(ctx.opts.connections / GRPC_STREAMS));
  const grpc: Workload = {
    id: "grpc",
    title: "gRPC books.v1.BooksService/books (h2c)",
    load: `h2load, ${clients} connections × ${GRPC_STREAMS} streams, HTTP/2 cleartext`,
    checks: "every call: HTTP 200 and exactly one full message of DATA (h2load totals); " +
      "grpc-status OK and the full catalogue on 200 calls with @grpc/grpc-js after each " +
      "round; a server process that dies is a failure",
    contenders: [
      grpcContender({
        ...grpcSpec,
        name: "ours",
        role: "ours",
        start: async () =>
          startOurs(place, {
            kvDir: await Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-" }),
            markers: [GRPC_RESTART],
          }),
        restartMarker: GRPC_RESTART,
      }),
      grpcContender({
        ...grpcSpec,
        name: GRPC_JS,
        role: "peer",
        start: () => startGrpcJs(place, booksFile),
      }),
      ...grpcGo(grpcSpec),
      ...baseline.grpc(grpcSpec),
    ],
    targets: [{ against: GRPC_JS, min: 1.3 }],
    notes: grpcGoNotes,
  };
  if (ref.grpcSkipped) grpc.skipped = ref.grpcSkipped;
  else if (!ctx.tools.h2load) grpc.skipped = "h2load is not installed (Debian nghttp2-client)";
  else if (!ctx.tools.node) grpc.skipped = "node is not installed (needed for @grpc/grpc-js)";

  // Multiplexed load and latency, each server process kept across the rounds as in production:
  // ours (the supervised listener child, as `deno task start` runs it), grpc-js on Node, and the
  // runtime's ceiling, a bare node:http2 server on this Deno sending the same pre-encoded frame.
  const grpcShape = (id: string, title: string, shape: GrpcShape): Workload => {
    const spec = { ...grpcSpec, samples: new Map<string, GrpcSample>(), shape, reuse: true };
    const workload: Workload = {
      id,
      title,
      load: `h2load, ${shape.clients} connection${shape.clients === 1 ? "" : "s"} × ` +
        `${shape.streams} stream${shape.streams === 1 ? "" : "s"}, HTTP/2 cleartext; one ` +
        "server process per contender for all rounds (peak memory: its whole run; ours: HTTP " +
        "process + gRPC listener child)",
      checks: grpc.checks + "; the message checked equal across the servers",
      contenders: [
        grpcContender({
          ...spec,
          name: "ours",
          role: "ours",
          start: async () =>
            startOurs(place, {
              kvDir: await Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-" }),
              markers: [GRPC_RESTART],
            }),
          restartMarker: GRPC_RESTART,
        }),
        grpcContender({
          ...spec,
          name: GRPC_JS,
          role: "peer",
          start: () => startGrpcJs(place, booksFile),
        }),
        ...grpcGo(spec),
        ...baseline.grpc(spec),
        grpcContender({
          ...spec,
          name: BARE_HTTP2,
          role: "ceiling",
          start: () => startBareHttp2(place, booksFile),
        }),
      ],
      // Issue 21, multiplexed: within reach of grpc-go in calls and tail, ahead of grpc-js.
      targets: shape.streams === 1 ? [] : [
        { against: GRPC_JS, min: 1.3 },
        ...("missing" in goToolchain ? [] : [
          { against: GRPC_GO, min: 0.6 },
          { measure: "p99", against: GRPC_GO, max: 2 } as const,
        ]),
      ],
      notes: grpcGoNotes,
    };
    if (grpc.skipped) workload.skipped = grpc.skipped;
    return workload;
  };
  const grpcMux = grpcShape("grpc-mux", "gRPC books, multiplexed (8 × 16)", {
    clients: 8,
    streams: 16,
  });
  const grpcLatency = grpcShape("grpc-latency", "gRPC books, one call at a time (1 × 1)", {
    clients: 1,
    streams: 1,
  });

  const bodyFile = `${ctx.tmp}/address.json`;
  await Deno.writeTextFile(bodyFile, JSON.stringify(ADDRESS_INPUT));
  const addresses: Workload = {
    id: "addresses",
    title: "POST /addresses (fresh KV file each round)",
    load: `${load}; the naive loop runs ${ctx.opts.connections === 64 ? 64 : "its 64"} ` +
      "workers in one process, no HTTP",
    checks: "every response: status 201 and body size (wrk Lua hook); every id answered 201 " +
      "found after SIGKILL and restart (committed before answered); no id answered twice",
    contenders: [
      postAddressesContender(ctx, { bodyFile, lengths: createdLengths(ref.created) }),
      naiveKvContender(ctx, { workers: 64, name: NAIVE, role: "peer" }),
      naiveKvContender(ctx, {
        workers: 1,
        name: "naive KV loop, 1 worker",
        role: "info",
        once: true,
      }),
      ...baseline.addresses({ bodyFile, lengths: createdLengths(ref.created) }),
    ],
    targets: [{ against: NAIVE, min: 1.5 }],
  };

  const serve = buildServeWorkloads(ctx, {
    load,
    restLoad,
    bodyFile,
    createdLengths: createdLengths(ref.created),
  });
  for (const workload of [restBooks, bookById, graphql, grpc, grpcMux, grpcLatency, addresses]) {
    workload.targets.push(MEMORY_TARGET);
    workload.notes = [...workload.notes ?? [], ...baseline.notes];
  }
  // Issue 28's rows carry their own targets (memory against raw Deno KV's, not issue 21's MiB).
  return [
    restBooks,
    bookById,
    graphql,
    grpc,
    grpcMux,
    grpcLatency,
    addresses,
    ...buildAddressReadWorkloads(ctx, baseline),
    buildCreatesWorkload(ctx, baseline),
    ...serve,
    ...await buildMatrixWorkloads(ctx),
  ];
}
