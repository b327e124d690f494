import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import http2 from "node:http2";
import { toBinary } from "@bufbuild/protobuf";
import { createLogger } from "../../lib/log.ts";
import { booksResponse } from "../../rpc/connect/books_service.ts";
import { BooksResponseSchema } from "../../rpc/gen/books/v1/books_pb.ts";
import { startGrpcListener } from "../../rpc/listener/grpc_listener.ts";
import { createBookStore } from "../../store/books.ts";
import { openAddressStore } from "../../store/addresses/repository.ts";
import { DEFAULT_BOOKS, readCatalogue } from "../../store/kv/open.ts";

interface Answer {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
}

function call(
  session: http2.ClientHttp2Session,
  body: Uint8Array,
  extra: Record<string, string> = {},
): Promise<Answer> {
  const req = session.request({
    ":method": "POST",
    ":path": "/books.v1.BooksService/books",
    "content-type": "application/grpc",
    te: "trailers",
    ...extra,
  });
  const answer: Answer = { headers: {}, trailers: {}, body: Buffer.alloc(0) };
  const chunks: Buffer[] = [];
  req.on("response", (h) => (answer.headers = h));
  req.on("trailers", (t) => (answer.trailers = t));
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  return new Promise((resolve, reject) => {
    req.on("end", () => resolve({ ...answer, body: Buffer.concat(chunks) }));
    req.on("error", reject);
    req.end(body);
  });
}

function framed(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.byteLength);
  out.writeUInt32BE(message.byteLength, 1);
  out.set(message, 5);
  return out;
}

Deno.test("unary calls answered on the HTTP/2 stream (rpc/unary/): books, whole and in order", async (t) => {
  const books = createBookStore(await readCatalogue(DEFAULT_BOOKS));
  const logs: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: "debug",
    write: (text) => {
      for (const line of text.split("\n")) if (line) logs.push(JSON.parse(line));
    },
  });
  using kv = await Deno.openKv(":memory:");
  const addresses = openAddressStore(kv);
  const listener = await startGrpcListener(
    { port: 0, host: "127.0.0.1" },
    { books, addresses, logger },
  );
  // One connection for every step: see docs/grpc.md on Deno's node:http2 and closed connections.
  const session = http2.connect(listener.url);
  const expected = framed(toBinary(BooksResponseSchema, booksResponse(books.list())));
  try {
    await t.step("an empty request: the whole catalogue, status OK, id and log line", async () => {
      const answer = await call(session, new Uint8Array(5), { "x-request-id": "fast-1" });
      assert.equal(answer.headers[":status"], 200);
      assert.equal(answer.headers["content-type"], "application/grpc+proto");
      assert.equal(answer.headers["x-request-id"], "fast-1");
      assert.equal(answer.trailers["grpc-status"], "0");
      assert.deepEqual(answer.body, expected);
      logger.flush();
      const line = logs.find((l) => l.msg === "rpc" && l.requestId === "fast-1");
      assert.equal(line?.procedure, "books.v1.BooksService/books");
      assert.equal(line?.code, "ok");
      assert.equal(typeof line?.durationMs, "number");
    });

    await t.step("without an id, or with a malformed one, a new id is sent", async () => {
      const variants: Record<string, string>[] = [{}, { "x-request-id": "bad id with spaces" }];
      for (const extra of variants) {
        const answer = await call(session, new Uint8Array(5), extra);
        assert.match(String(answer.headers["x-request-id"]), /^[0-9a-f-]{36}$/);
        assert.deepEqual(answer.body, expected);
      }
    });

    await t.step("100 calls at once on one connection: each whole, in order, with OK", async () => {
      // The listener sends the frames of all calls answered in one turn of the event loop
      // together (rpc/http2/native_session.ts); every call must still get its own headers, message
      // and trailers.
      const ids = Array.from({ length: 100 }, (_, i) => `many-${i}`);
      const answers = await Promise.all(
        ids.map((id) => call(session, new Uint8Array(5), { "x-request-id": id })),
      );
      for (const [i, answer] of answers.entries()) {
        assert.equal(answer.headers[":status"], 200);
        assert.equal(answer.headers["x-request-id"], ids[i]);
        assert.equal(answer.trailers["grpc-status"], "0");
        assert.deepEqual(answer.body, expected);
      }
      logger.flush();
      const logged = new Set(logs.filter((l) => l.msg === "rpc").map((l) => l.requestId));
      assert.ok(ids.every((id) => logged.has(id)), "one rpc log line per call");
    });

    await t.step("requests the lean path leaves to Connect get the same message", async () => {
      const cases: [string, Uint8Array, Record<string, string>][] = [
        ["an unknown field in the request", new Uint8Array([0, 0, 0, 0, 2, 8, 1]), {}],
        ["a deadline in microseconds", new Uint8Array(5), { "grpc-timeout": "5000000u" }],
        ["a deadline in seconds", new Uint8Array(5), { "grpc-timeout": "5S" }],
        ["grpc-encoding identity", new Uint8Array(5), { "grpc-encoding": "identity" }],
        ["content type +proto", new Uint8Array(5), { "content-type": "application/grpc+proto" }],
      ];
      for (const [name, body, extra] of cases) {
        const answer = await call(session, body, extra);
        assert.equal(answer.trailers["grpc-status"], "0", name);
        assert.deepEqual(answer.body, expected, name);
        assert.ok(answer.headers["x-request-id"], name);
      }
    });

    await t.step("bad requests get Connect's own statuses and messages", async () => {
      const cases: [Uint8Array, Record<string, string>, string, RegExp][] = [
        [new Uint8Array(0), {}, "12", /missing input message/],
        [new Uint8Array(10), {}, "12", /extra input message/],
        // Client input is never INTERNAL (issue 10): Connect's INTERNAL is rewritten.
        [new Uint8Array([1, 0, 0, 0, 0]), {}, "3", /compressed envelope/],
        [new Uint8Array([0, 0, 0, 0, 9, 1]), {}, "3", /incomplete envelope/],
        [new Uint8Array(5), { "grpc-timeout": "soon" }, "3", /invalid grpc timeout/],
      ];
      for (const [body, extra, status, message] of cases) {
        const answer = await call(session, body, extra);
        assert.equal(answer.headers[":status"], 200);
        assert.equal(answer.trailers["grpc-status"], status, String(message));
        assert.match(decodeURIComponent(String(answer.trailers["grpc-message"])), message);
        assert.equal(answer.body.byteLength, 0);
      }
      // The connection is still good after every refusal.
      assert.deepEqual((await call(session, new Uint8Array(5))).body, expected);
    });
    await t.step("the client's GOAWAY is kept from Deno's nghttp2 (docs/grpc.md)", async () => {
      // A second connection, closed by the client: it sends GOAWAY, which the listener drops.
      const other = http2.connect(listener.url);
      assert.deepEqual((await call(other, new Uint8Array(5))).body, expected);
      await new Promise<void>((resolve) => other.close(() => resolve()));
      assert.deepEqual((await call(session, new Uint8Array(5))).body, expected);
      logger.flush();
      assert.deepEqual(logs.filter((l) => String(l.msg).includes("GOAWAY not filtered")), []);
    });
  } finally {
    session.close();
    await listener.shutdown();
  }
});
