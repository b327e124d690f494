import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { AppError, ERROR_DEFINITIONS, type ErrorCode } from "../../lib/errors.ts";
import { GRPC_CODE_OF } from "../../rpc/connect/errors.ts";
import type { BookStore } from "../../store/books.ts";
import {
  booksClient,
  connectTransport,
  grpcTransport,
  http2Session,
  rawSession,
} from "../support/rpc_clients.ts";
import { h2Post, h2Request } from "../support/raw_http.ts";
import { BOOKS_PATH as BOOKS } from "../support/requests.ts";
import { startTestListener, startTestServer } from "../support/server.ts";

/** A store whose list() fails with the given error: the fault reaches the real listener. */
function failingStore(error: unknown): BookStore {
  return {
    list: () => {
      throw error;
    },
    get: () => undefined,
    listJson: () => "[]",
    getJson: () => undefined,
    isReady: () => true,
  };
}

async function callBooks(error: unknown) {
  const listener = await startTestListener({}, { books: failingStore(error) });
  // One connection for both protocols.
  const session = http2Session(listener.url);
  try {
    const grpcError = await booksClient(grpcTransport(listener.url, session))
      .books({}, { headers: { "x-request-id": "fault-1" } }).then(
        () => assert.fail("the call should fail"),
        (e) => ConnectError.from(e),
      );
    const connectError = await booksClient(connectTransport(listener.url, "2", { session }))
      .books({}).then(() => assert.fail("the call should fail"), (e) => ConnectError.from(e));
    listener.flush();
    return { grpcError, connectError, logs: listener.logs };
  } finally {
    await listener.shutdown();
  }
}

Deno.test("an application error becomes its gRPC status, with code and retry hint", async () => {
  const { grpcError, connectError, logs } = await callBooks(
    new AppError("service-unavailable", "KV is busy; try again.", { retryAfter: 2 }),
  );
  for (const error of [grpcError, connectError]) {
    assert.equal(error.code, Code.Unavailable);
    assert.equal(error.rawMessage, "KV is busy; try again.");
    assert.equal(error.metadata.get("error-code"), "service-unavailable");
    assert.equal(error.metadata.get("grpc-retry-pushback-ms"), "2000");
  }
  assert.equal(grpcError.metadata.get("x-request-id"), "fault-1");
  // Expected failures are not logged as errors; the access log names the status.
  assert.equal(logs.filter((l) => l.level === "error").length, 0);
  const line = logs.find((l) => l.msg === "rpc" && l.requestId === "fault-1");
  assert.equal(line?.code, "Unavailable");
});

Deno.test("an unexpected error is masked as INTERNAL and logged with its request id", async () => {
  const { grpcError, connectError, logs } = await callBooks(
    new TypeError("connection string postgres://admin:hunter2@db failed"),
  );
  for (const error of [grpcError, connectError]) {
    assert.equal(error.code, Code.Internal);
    assert.doesNotMatch(error.rawMessage, /hunter2|postgres|TypeError/);
    assert.equal(error.metadata.get("error-code"), "internal");
  }
  assert.equal(grpcError.rawMessage, "An unexpected error occurred (request id fault-1).");
  const logged = logs.find((l) => l.level === "error" && l.requestId === "fault-1");
  assert.equal(logged?.procedure, "books.v1.BooksService/books");
  assert.match(String(logged?.error), /^TypeError: connection string/);
  assert.match(String(logged?.stack), /rpc_errors_test\.ts/); // the stack stays in the log
});

Deno.test("every application error code has a gRPC status matching its HTTP status", () => {
  // The gRPC <-> HTTP mapping Connect documents; 405, 412, 415 and 422 are not in it and map by
  // meaning (a key reused with another body: the system is not in the state the call needs; an
  // etag that no longer matches: ABORTED, as AIP-154 says, the client re-reads and retries).
  // A quota is a 409 in HTTP (the caller's state conflicts) and RESOURCE_EXHAUSTED in gRPC,
  // whose definition names per-user quotas; 428 (confirmation missing) is a failed precondition.
  // A resume token past what is kept (410) asks for a position outside the range there is:
  // OUT_OF_RANGE, as gRPC defines it for reading past the end.
  const byHttp: Record<number, Code[]> = {
    400: [Code.InvalidArgument],
    401: [Code.Unauthenticated],
    403: [Code.PermissionDenied],
    404: [Code.NotFound],
    405: [Code.Unimplemented],
    406: [Code.InvalidArgument],
    409: [Code.AlreadyExists, Code.Aborted, Code.ResourceExhausted],
    410: [Code.OutOfRange],
    412: [Code.Aborted],
    413: [Code.ResourceExhausted],
    415: [Code.InvalidArgument],
    422: [Code.FailedPrecondition],
    428: [Code.FailedPrecondition],
    429: [Code.ResourceExhausted],
    500: [Code.Internal],
    503: [Code.Unavailable],
    504: [Code.DeadlineExceeded],
  };
  for (const [code, definition] of Object.entries(ERROR_DEFINITIONS)) {
    const grpcCode = GRPC_CODE_OF[code as ErrorCode];
    assert.ok(
      byHttp[definition.status]?.includes(grpcCode),
      `${code} (HTTP ${definition.status}) maps to ${Code[grpcCode]}`,
    );
  }
});

const REFLECTION = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";

// Fuzz finding (REST fuzz, seeds 1922064966 and 190438894): a Connect call whose body is not
// compressed as its Content-Encoding says was 500 `internal` "decompression failed"; Deno's
// node:zlib reports brotli errors with codes Connect-ES does not know.
Deno.test("a Connect body that does not decompress is 400 invalid_argument on both ports, not 500", async () => {
  const server = await startTestServer();
  const session = rawSession(server.grpcUrl!);
  try {
    for (const encoding of ["br", "gzip"]) {
      const headers = { "content-type": "application/json", "content-encoding": encoding };
      const res = await fetch(server.httpUrl + BOOKS, { method: "POST", headers, body: "{}" });
      assert.equal(res.status, 400, encoding);
      assert.equal((await res.json()).code, "invalid_argument");
      const h2 = await h2Post(session, BOOKS, headers, new TextEncoder().encode("{}"));
      assert.equal(h2.status, 400, encoding);
      assert.equal(JSON.parse(h2.body.toString()).code, "invalid_argument");
      // Over gRPC: a compressed envelope that is not gzip.
      const grpc = await h2Post(session, BOOKS, {
        "content-type": "application/grpc",
        "grpc-encoding": encoding,
      }, new Uint8Array([1, 0, 0, 0, 2, 0x7b, 0x7d]));
      assert.equal(grpc.fields.get("grpc-status"), "3", encoding);
    }
  } finally {
    await server.close();
  }
});

// Fuzz finding (RPC fuzz, seed 642755631): an undecodable message on a stream (reflection) was
// INTERNAL "parse binary" over gRPC and gRPC-Web, as was an undecodable unary message.
Deno.test("an undecodable message is INVALID_ARGUMENT over gRPC and gRPC-Web, unary and streaming", async () => {
  const server = await startTestServer();
  const session = rawSession(server.grpcUrl!);
  try {
    // A valid first reflection request (list_services), then bytes that are no message.
    const stream = new Uint8Array([0, 0, 0, 0, 2, 0x3a, 0, 0, 0, 0, 0, 2, 0, 0]);
    const grpc = await h2Post(session, REFLECTION, { "content-type": "application/grpc" }, stream);
    assert.equal(grpc.fields.get("grpc-status"), "3");
    assert.match(decodeURIComponent(grpc.fields.get("grpc-message")!), /^parse binary/);
    const web = await h2Post(session, REFLECTION, {
      "content-type": "application/grpc-web+proto",
    }, stream);
    assert.match(web.body.toString("latin1"), /grpc-status: ?3\r\n/);
    const unary = await h2Post(
      session,
      BOOKS,
      { "content-type": "application/grpc-web+proto" },
      new Uint8Array([0, 0, 0, 0, 3, 0xff, 0xff, 0xff]),
    );
    assert.match(unary.body.toString("latin1"), /grpc-status: ?3\r\n/);
    const viaFetch = await fetch(server.httpUrl + BOOKS, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: new Uint8Array([0, 0, 0, 0, 3, 0xff, 0xff, 0xff]),
    });
    assert.match(await viaFetch.text(), /grpc-status: ?3\r\n/);
    // The listener still answers a good call on the same connection.
    const ok = await h2Post(
      session,
      BOOKS,
      { "content-type": "application/grpc" },
      new Uint8Array(5),
    );
    assert.equal(ok.fields.get("grpc-status"), "0");
  } finally {
    await server.close();
  }
});

// Fuzz finding (RPC fuzz, seed 164412583): a Connect GET with base64=1 and a message that is not
// base64 was 500 `internal` on both ports.
Deno.test("a Connect GET whose message is not base64 is 400 invalid_argument, not 500", async () => {
  const server = await startTestServer();
  const session = rawSession(server.grpcUrl!);
  try {
    const query = "?encoding=proto&message=!!!&base64=1&connect=v1";
    const res = await fetch(server.httpUrl + BOOKS + query);
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, "invalid_argument");
    const h2 = await h2Request(session, { method: "GET", target: BOOKS + query });
    assert.equal(h2.status, 400);
    assert.equal(JSON.parse(h2.body.toString()).code, "invalid_argument");
    // A good GET still works.
    const good = await fetch(server.httpUrl + BOOKS + "?encoding=json&message=%7B%7D&connect=v1");
    assert.equal(good.status, 200);
    await good.body?.cancel();
  } finally {
    await server.close();
  }
});

// Fuzz finding (REST fuzz, seed 1884627760): a request to the Connect path on the HTTP port that
// speaks no RPC protocol (a GET without `encoding`, a text/plain POST) got a bare 415 with no body.
Deno.test("a non-RPC request to an RPC path on the HTTP port gets the 415 unsupported-media-type body", async () => {
  const server = await startTestServer();
  try {
    for (
      const init of [{}, { method: "POST", headers: { "content-type": "text/plain" }, body: "x" }]
    ) {
      const res = await fetch(server.httpUrl + BOOKS, init);
      assert.equal(res.status, 415);
      assert.equal(res.headers.get("content-type"), "application/json");
      assert.ok(res.headers.get("x-request-id"));
      assert.equal((await res.json()).errors[0].error, "unsupported-media-type");
    }
  } finally {
    await server.close();
  }
});
