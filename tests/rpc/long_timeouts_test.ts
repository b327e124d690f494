/**
 * rpc/connect/long_timeouts.ts: a deadline further away than a timer can wait (2^31 − 1 ms)
 * reaches the method as no deadline, instead of one that fires after 1 ms; every other
 * deadline, and every header that is not well-formed (Connect judges those), is left as sent.
 * Calls go to the registered handlers directly, as the adapters call them.
 */
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { createConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { BooksResponseSchema, BooksService } from "../../rpc/gen/books/v1/books_pb.ts";
import { withLongTimeoutsUnbounded } from "../../rpc/connect/long_timeouts.ts";

interface Seen {
  timeoutMs: number | undefined;
  grpcTimeout: string | null;
  connectTimeout: string | null;
  requestId: string | null;
}

function booksHandler(): { handler: UniversalHandler; calls: Seen[] } {
  const calls: Seen[] = [];
  const router = createConnectRouter();
  withLongTimeoutsUnbounded((r) => {
    r.service(BooksService, {
      books(_request, context) {
        calls.push({
          timeoutMs: context.timeoutMs(),
          grpcTimeout: context.requestHeader.get("grpc-timeout"),
          connectTimeout: context.requestHeader.get("connect-timeout-ms"),
          requestId: context.requestHeader.get("x-request-id"),
        });
        return create(BooksResponseSchema, {});
      },
    });
  })(router);
  assert.equal(router.handlers.length, 1);
  return { handler: router.handlers[0]!, calls };
}

const PATH = "http://h/books.v1.BooksService/books";

async function drain(response: UniversalServerResponse): Promise<void> {
  if (response.body === undefined) return;
  for await (const _ of response.body) { /* the whole answer, so the call completes */ }
}

async function connectCall(handler: UniversalHandler, timeout: string | undefined) {
  const header = new Headers({
    "content-type": "application/json",
    "connect-protocol-version": "1",
    "x-request-id": "r-1",
  });
  if (timeout !== undefined) header.set("connect-timeout-ms", timeout);
  const response = await handler({
    httpVersion: "1.1",
    method: "POST",
    url: PATH,
    header,
    body: {},
    signal: new AbortController().signal,
  });
  await drain(response);
  return response;
}

async function grpcCall(handler: UniversalHandler, timeout: string) {
  const response = await handler({
    httpVersion: "2.0",
    method: "POST",
    url: PATH,
    header: new Headers({
      "content-type": "application/grpc+proto",
      "te": "trailers",
      "grpc-timeout": timeout,
      "x-request-id": "r-2",
    }),
    // One empty message, enveloped: no flags, length 0.
    body: (async function* () {
      yield new Uint8Array(5);
    })(),
    signal: new AbortController().signal,
  });
  await drain(response);
  return response;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

Deno.test("connect-timeout-ms past a timer's reach is dropped; within it, kept", async () => {
  const cases: [string | undefined, "kept" | "dropped"][] = [
    [undefined, "kept"],
    ["5000", "kept"],
    [String(MAX_TIMER_MS), "kept"],
    [String(MAX_TIMER_MS + 1), "dropped"],
    ["9999999999", "dropped"],
  ];
  for (const [timeout, expected] of cases) {
    const { handler, calls } = booksHandler();
    const response = await connectCall(handler, timeout);
    assert.equal(response.status, 200, String(timeout));
    const [seen] = calls;
    assert.ok(seen, String(timeout));
    assert.equal(seen.requestId, "r-1");
    if (expected === "dropped" || timeout === undefined) {
      assert.deepEqual([seen.connectTimeout, seen.timeoutMs], [null, undefined], String(timeout));
    } else {
      assert.equal(seen.connectTimeout, timeout);
      assert.ok(seen.timeoutMs! > 0 && seen.timeoutMs! <= Number(timeout), String(timeout));
    }
  }
});

Deno.test("grpc-timeout past a timer's reach is dropped; within it, kept", async () => {
  const cases: [string, "kept" | "dropped"][] = [
    ["1000m", "kept"],
    ["30S", "kept"],
    ["2147483S", "kept"],
    ["2147484S", "dropped"],
    ["35792M", "dropped"],
    ["99999999H", "dropped"],
    ["99999999n", "kept"],
  ];
  for (const [timeout, expected] of cases) {
    const { handler, calls } = booksHandler();
    const response = await grpcCall(handler, timeout);
    assert.equal(response.trailer?.get("grpc-status"), "0", timeout);
    const [seen] = calls;
    assert.ok(seen, timeout);
    assert.equal(seen.requestId, "r-2");
    if (expected === "dropped") {
      assert.deepEqual([seen.grpcTimeout, seen.timeoutMs], [null, undefined], timeout);
    } else {
      assert.equal(seen.grpcTimeout, timeout);
      assert.equal(typeof seen.timeoutMs, "number", timeout);
    }
  }
});

Deno.test("a timeout that is not well-formed is left for Connect to refuse", async () => {
  for (const timeout of ["99999999999", "-1", "1e10"]) {
    const { handler, calls } = booksHandler();
    const response = await connectCall(handler, timeout);
    assert.notEqual(response.status, 200, timeout);
    assert.equal(calls.length, 0, timeout);
  }
  for (const timeout of ["999999999H", "1x", "H"]) {
    const { handler, calls } = booksHandler();
    const response = await grpcCall(handler, timeout);
    assert.notEqual(
      response.trailer?.get("grpc-status") ?? response.header?.get("grpc-status"),
      "0",
    );
    assert.equal(calls.length, 0, timeout);
  }
});
