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
} from "../support/rpc_clients.ts";
import { startTestListener } from "../support/server.ts";

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
  const byHttp: Record<number, Code[]> = {
    400: [Code.InvalidArgument],
    401: [Code.Unauthenticated],
    403: [Code.PermissionDenied],
    404: [Code.NotFound],
    405: [Code.Unimplemented],
    406: [Code.InvalidArgument],
    409: [Code.AlreadyExists, Code.Aborted, Code.ResourceExhausted],
    412: [Code.Aborted],
    413: [Code.ResourceExhausted],
    415: [Code.InvalidArgument],
    422: [Code.FailedPrecondition],
    428: [Code.FailedPrecondition],
    429: [Code.ResourceExhausted],
    500: [Code.Internal],
    503: [Code.Unavailable],
  };
  for (const [code, definition] of Object.entries(ERROR_DEFINITIONS)) {
    const grpcCode = GRPC_CODE_OF[code as ErrorCode];
    assert.ok(
      byHttp[definition.status]?.includes(grpcCode),
      `${code} (HTTP ${definition.status}) maps to ${Code[grpcCode]}`,
    );
  }
});
