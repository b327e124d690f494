import assert from "node:assert/strict";
import type { Transport } from "@connectrpc/connect";
import { spawnServer, startTestServer } from "../support/server.ts";
import { waitFor } from "../support/process.ts";
import { waitForLine } from "../support/logs.ts";
import { addressBook, answerOf, graphql } from "../support/requests.ts";
import { booksClient, connectTransport, grpcTransport } from "../support/rpc_clients.ts";

interface ExportedSpan {
  name: string;
  scope: string;
  traceId: string;
  attributes: Record<string, unknown>;
}

/** A minimal OTLP/HTTP receiver (http/json): keeps every span posted to /v1/traces. */
function startReceiver() {
  const spans: ExportedSpan[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.json().catch(() => ({}));
    if (new URL(req.url).pathname === "/v1/traces") {
      for (const resource of body.resourceSpans ?? []) {
        for (const scope of resource.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({
              name: span.name,
              scope: scope.scope?.name,
              // http/json carries ids as hex strings (OTLP JSON encoding).
              traceId: span.traceId,
              attributes: Object.fromEntries(
                (span.attributes ?? []).map((
                  a: { key: string; value: Record<string, unknown> },
                ) => [
                  a.key,
                  Object.values(a.value)[0],
                ]),
              ),
            });
          }
        }
      }
    }
    return Response.json({});
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, spans, stop: () => server.shutdown() };
}

function byRequestId(spans: ExportedSpan[], id: string): ExportedSpan | undefined {
  return spans.find((s) => s.attributes["request.id"] === id);
}

Deno.test("OpenTelemetry: route-named spans from REST, GraphQL and gRPC; traceId in the access log", async () => {
  const receiver = startReceiver();
  const dir = await Deno.makeTempDir({ prefix: "books-otel-" });
  const server = await spawnServer({
    KV_PATH: `${dir}/kv.sqlite3`,
    OTEL_DENO: "true",
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_SERVICE_NAME: "books-otel-test",
    // Export soon after each span ends, so the test does not wait for the default 5 s batches.
    OTEL_BSP_SCHEDULE_DELAY: "200",
  });
  try {
    const call = async (path: string, id: string) =>
      await answerOf(await fetch(`${server.httpUrl}${path}`, { headers: { "x-request-id": id } }));
    const created = await answerOf(
      await addressBook(server.httpUrl).create(
        { name: "Traced", city: "Kumasi", postalCode: "00233" },
        { "x-request-id": "otel-create" },
      ),
    );
    assert.equal(created.status, 201);
    const id = created.body.id;
    assert.equal((await call(`/addresses/${id}`, "otel-get")).status, 200);
    assert.equal((await call("/addresses/999999", "otel-missing")).status, 404);
    assert.equal((await call("/rest/books", "otel-hot-list")).status, 200);
    assert.equal((await call("/api/book/3", "otel-hot-book")).status, 200);
    const books = async (id: string) =>
      await answerOf(
        await graphql(server.httpUrl, { query: "{ books { title } }" }, { "x-request-id": id }),
      );
    assert.equal((await books("otel-graphql")).status, 200);
    // The same document again is answered from the result cache, in front of the router.
    assert.equal((await books("otel-graphql-cached")).status, 200);

    // Each call continues the caller's trace: a span on the gRPC listener is its own, started
    // from the incoming traceparent.
    const callerTrace = (requestId: string) =>
      `${requestId === "otel-grpc" ? "a" : "b"}`.repeat(32);
    const rpc = (transport: Transport, requestId: string) =>
      booksClient(transport).books({}, {
        headers: {
          "x-request-id": requestId,
          traceparent: `00-${callerTrace(requestId)}-00f067aa0ba902b7-01`,
        },
      });
    await rpc(connectTransport(server.httpUrl, "1.1"), "otel-connect");
    // Native gRPC, empty request: the listener's lean unary path answers it.
    await rpc(grpcTransport(server.grpcUrl!), "otel-grpc");
    // Connect on the gRPC listener goes through Connect's handler and the interceptor.
    await rpc(connectTransport(server.grpcUrl!, "2"), "otel-grpc-connect");

    const expected: [string, string, string | undefined][] = [
      ["otel-create", "POST /addresses", "/addresses"],
      ["otel-get", "GET /addresses/{id}", "/addresses/{id}"],
      ["otel-missing", "GET /addresses/{id}", "/addresses/{id}"],
      ["otel-hot-list", "GET /rest/books", "/rest/books"],
      ["otel-hot-book", "GET /api/book/{id}", "/api/book/{id}"],
      ["otel-graphql", "POST /graphql", "/graphql"],
      ["otel-graphql-cached", "POST /graphql", "/graphql"],
      ["otel-connect", "POST /books.v1.BooksService/books", "/books.v1.BooksService/books"],
      ["otel-grpc", "books.v1.BooksService/books", undefined],
      ["otel-grpc-connect", "books.v1.BooksService/books", undefined],
    ];
    await waitFor(
      "every span exported",
      () => expected.every(([requestId]) => byRequestId(receiver.spans, requestId)) || undefined,
    );
    for (const [requestId, name, route] of expected) {
      const span = byRequestId(receiver.spans, requestId)!;
      assert.equal(span.name, name, requestId);
      assert.equal(span.attributes["http.route"], route, requestId);
      assert.doesNotMatch(span.name, new RegExp(`/${id}\\b|/3\\b|999999`));
    }
    for (const requestId of ["otel-connect", "otel-grpc", "otel-grpc-connect"]) {
      const span = byRequestId(receiver.spans, requestId)!;
      assert.equal(span.attributes["rpc.service"], "books.v1.BooksService", requestId);
      assert.equal(span.attributes["rpc.method"], "books", requestId);
    }
    assert.equal(byRequestId(receiver.spans, "otel-grpc")!.attributes["rpc.system"], "grpc");
    assert.equal(byRequestId(receiver.spans, "otel-grpc")!.traceId, callerTrace("otel-grpc"));
    assert.equal(
      byRequestId(receiver.spans, "otel-grpc-connect")!.traceId,
      callerTrace("otel-grpc-connect"),
    );
    assert.equal(
      byRequestId(receiver.spans, "otel-connect")!.attributes["rpc.system"],
      "connect_rpc",
    );
    assert.equal(
      byRequestId(receiver.spans, "otel-get")!.attributes["http.response.status_code"],
      "200",
    );

    // The access log names the trace of each request: the exported span's trace id. The gRPC
    // child's lines pass through two buffered processes, so they may follow their spans.
    for (const [requestId] of expected) {
      const line = await waitForLine(
        server.lines,
        (l) => l.requestId === requestId && (l.msg === "request" || l.msg === "rpc"),
        `the access-log line of ${requestId}`,
      );
      assert.match(line.traceId as string, /^[0-9a-f]{32}$/, requestId);
      assert.equal(line.traceId, byRequestId(receiver.spans, requestId)!.traceId, requestId);
    }
  } finally {
    await server.stop();
    await receiver.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("with tracing off the access log carries no traceId", async () => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  try {
    const response = await fetch(`${server.httpUrl}/addresses/1`, {
      headers: { "x-request-id": "no-trace" },
    });
    await response.body?.cancel();
    const line = await waitForLine(
      () => server.logs,
      (l) => l.requestId === "no-trace",
      "the access-log line",
    );
    assert.equal("traceId" in line, false);
  } finally {
    await server.close();
  }
});
