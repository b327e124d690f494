/**
 * rpc/connect/long_timeouts.ts: a deadline further away than a timer can wait (2^31 − 1 ms)
 * reaches the method as no deadline, instead of one that fires after 1 ms; every other
 * deadline, and every header that is not well-formed (Connect judges those), is left as sent.
 * Calls go to the registered handlers directly, as the adapters call them; the last test sends
 * such deadlines over sockets, on every protocol and port.
 */
import assert from "node:assert/strict";
import type { Buffer } from "node:buffer";
import { create } from "@bufbuild/protobuf";
import { createConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { BooksResponseSchema, BooksService } from "../../rpc/gen/books/v1/books_pb.ts";
import { withLongTimeoutsUnbounded } from "../../rpc/connect/long_timeouts.ts";
import { h2Post } from "../support/raw_http.ts";
import { BOOKS_PATH as BOOKS } from "../support/requests.ts";
import { rawSession } from "../support/rpc_clients.ts";
import { startTestServer } from "../support/server.ts";

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

// Seen in CI's log of the RPC fuzz (TimeoutOverflowWarning, seed 1422774553): Connect-ES arms a
// timer for the whole timeout, and a timer past 2^31 − 1 ms fires after 1 ms, so a call with a
// legal but distant deadline ended DEADLINE_EXCEEDED after 1 ms (a stream at once).
Deno.test("a deadline further away than a timer can wait is no deadline, on every protocol", async () => {
  const server = await startTestServer();
  const session = rawSession(server.grpcUrl!);
  try {
    const hours = { "grpc-timeout": "99999999H" };
    const web = { "content-type": "application/grpc-web+proto", ...hours };
    const viaFetch = await fetch(server.httpUrl + BOOKS, {
      method: "POST",
      headers: web,
      body: new Uint8Array(5),
    });
    assert.equal(viaFetch.status, 200);
    assert.match(await viaFetch.text(), /grpc-status: ?0\r\n/);
    const connect = { "content-type": "application/json", "connect-timeout-ms": "9999999999" };
    const res = await fetch(server.httpUrl + BOOKS, {
      method: "POST",
      headers: connect,
      body: "{}",
    });
    assert.equal(res.status, 200);
    assert.ok(Array.isArray((await res.json()).book));
    const h2Web = await h2Post(session, BOOKS, web, new Uint8Array(5));
    assert.match(h2Web.body.toString("latin1"), /grpc-status: ?0\r\n/);
    const h2Connect = await h2Post(session, BOOKS, connect, new TextEncoder().encode("{}"));
    assert.equal(h2Connect.status, 200);
    // Native gRPC through Connect's handler (a deadline past a timer's reach is never the lean path's).
    const unknownField = new Uint8Array([0, 0, 0, 0, 2, 0x08, 0x01]);
    const grpc = await h2Post(
      session,
      BOOKS,
      { "content-type": "application/grpc", ...hours },
      unknownField,
    );
    assert.equal(grpc.fields.get("grpc-status"), "0", String(grpc.fields.get("grpc-message")));
    // A stream with a distant deadline stays open (it ended DEADLINE_EXCEEDED after 1 ms).
    for (const type of ["application/grpc", "application/grpc-web+proto"]) {
      const watch = session.request({
        ":method": "POST",
        ":path": "/grpc.health.v1.Health/Watch",
        te: "trailers",
        "content-type": type,
        ...hours,
      });
      let ended = "";
      watch.on("trailers", (t) => (ended = String(t["grpc-status"])));
      const first = new Promise((resolve) => watch.once("data", resolve));
      watch.end(new Uint8Array(5));
      await first;
      let tail = "";
      watch.on("data", (chunk: Buffer) => (tail += chunk.toString("latin1")));
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(ended, "", `${type}: the watch ended with status ${ended}`);
      assert.doesNotMatch(tail, /grpc-status/, type);
      watch.close();
    }
    // A near deadline still applies.
    const near = await fetch(server.httpUrl + BOOKS, {
      method: "POST",
      headers: { ...connect, "connect-timeout-ms": "1000" },
      body: "{}",
    });
    assert.equal(near.status, 200);
    await near.body?.cancel();
  } finally {
    await server.close();
  }
});
