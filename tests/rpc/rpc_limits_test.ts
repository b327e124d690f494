import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import http2 from "node:http2";
import net from "node:net";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { fromBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { BooksResponseSchema } from "../../rpc/gen/books/v1/books_pb.ts";
import { Health } from "../../rpc/gen/grpc/health/v1/health_pb.ts";
import { MAX_MESSAGE_BYTES } from "../../rpc/connect/router.ts";
import { DEFAULT_BOOKS, readCatalogue } from "../../store/kv/open.ts";
import { h2Request } from "../support/raw_http.ts";
import { BOOKS_PATH } from "../support/requests.ts";
import {
  booksClient,
  grpcJsClient,
  grpcTransport,
  http2Session,
  rawSession,
} from "../support/rpc_clients.ts";
import { startTestListener, startTestServer } from "../support/server.ts";

/**
 * One POST with a hand-made body (node:http2 client): its status and gRPC status. All calls share
 * one connection: each connection a client closes is a chance to hit the Deno 2.9.6 node:http2
 * crash described in docs/grpc.md, so the tests open few.
 */
async function rawCall(
  session: http2.ClientHttp2Session,
  path: string,
  body: Uint8Array,
  contentTypeOrHeaders: string | Record<string, string> = "application/grpc",
) {
  const extra = typeof contentTypeOrHeaders === "string"
    ? { "content-type": contentTypeOrHeaders }
    : { "content-type": "application/grpc", ...contentTypeOrHeaders };
  const answer = await h2Request(session, {
    method: "POST",
    target: path,
    headers: { te: "trailers", ...extra },
    body,
  });
  return {
    status: answer.status,
    grpcStatus: answer.fields.get("grpc-status") ?? undefined,
    grpcMessage: decodeURIComponent(answer.fields.get("grpc-message") ?? ""),
    body: answer.body,
  };
}

/** Writes raw bytes on a TCP connection; resolves with what came back once the server closed. */
function rawSocket(grpcUrl: string, bytes: Uint8Array[]): Promise<Buffer> {
  const url = new URL(grpcUrl);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(url.port), url.hostname, () => {
      for (const b of bytes) socket.write(b);
    });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error("the server kept the broken connection open"));
    }, 5000);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
  });
}

/** The GOAWAY frame (type 7) in raw HTTP/2 output, as [last stream id, error code]. */
function goawayOf(bytes: Buffer): [number, number] | undefined {
  for (let at = 0; at + 9 <= bytes.length;) {
    const length = bytes.readUIntBE(at, 3);
    if (bytes[at + 3] === 7) return [bytes.readUInt32BE(at + 9), bytes.readUInt32BE(at + 13)];
    at += 9 + length;
  }
  return undefined;
}

const EMPTY_MESSAGE = new Uint8Array([0, 0, 0, 0, 0]);
const PREFACE = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

Deno.test("the gRPC listener survives bad input and enforces its limits", async (t) => {
  const server = await startTestServer();
  const grpcUrl = server.grpcUrl!;
  const session = http2Session(grpcUrl);
  const books = booksClient(grpcTransport(grpcUrl, session));
  const health = createClient(Health, grpcTransport(grpcUrl, session));
  async function stillServes() {
    assert.ok((await books.books({})).book.length >= 25);
  }
  const raw = rawSession(grpcUrl);
  const remoteSettings = new Promise<http2.Settings>((resolve) =>
    raw.once("remoteSettings", resolve)
  );
  const grpcJs = grpcJsClient(grpcUrl, { service: [] });
  function grpcJsUnary(path: string, request: Buffer, deadline?: Date) {
    return new Promise<{ code: number; details: string }>((resolve) => {
      grpcJs.makeUnaryRequest(
        path,
        (b: Buffer) => b,
        (b: Buffer) => b,
        request,
        new grpc.Metadata(),
        deadline ? { deadline } : {},
        (error) =>
          resolve(error ? { code: error.code, details: error.details } : { code: 0, details: "" }),
      );
    });
  }
  try {
    await t.step("HTTP/2 settings: 100 concurrent streams, 16 KiB of headers", async () => {
      const settings = await remoteSettings;
      assert.equal(settings.maxConcurrentStreams, 100);
      assert.equal(settings.maxHeaderListSize, 16 * 1024);
    });

    await t.step("headers over 16 KiB: that stream is reset, the connection lives on", async () => {
      const req = raw.request({
        ":method": "POST",
        ":path": "/books.v1.BooksService/books",
        "content-type": "application/grpc",
        "x-padding": "a".repeat(20_000),
      });
      req.on("error", () => {});
      req.resume();
      await new Promise((resolve) => {
        req.on("close", resolve);
        req.end(EMPTY_MESSAGE);
      });
      assert.equal(req.rstCode, http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
      const answer = await rawCall(raw, "/books.v1.BooksService/books", EMPTY_MESSAGE);
      assert.equal(answer.grpcStatus, "0");
    });

    await t.step("a broken HTTP/2 frame: GOAWAY PROTOCOL_ERROR, connection closed", async () => {
      // A frame of unknown type 0xff on stream 0 is fine; a DATA frame on stream 0 is not.
      const badData = new Uint8Array([0, 0, 4, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]);
      const answer = await rawSocket(grpcUrl, [
        PREFACE,
        new Uint8Array([0, 0, 0, 4, 0, 0, 0, 0, 0]),
        badData,
      ]);
      assert.deepEqual(goawayOf(answer)?.[1], 1); // PROTOCOL_ERROR
      await stillServes();
    });

    await t.step("plain HTTP/1.1 on the HTTP/2 port: refused, connection closed", async () => {
      const request = new TextEncoder().encode("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      const answer = await rawSocket(grpcUrl, [request]);
      assert.ok(goawayOf(answer), "expected an HTTP/2 GOAWAY");
      await stillServes();
    });

    await t.step("a truncated gRPC envelope: INVALID_ARGUMENT", async () => {
      const answer = await rawCall(
        raw,
        "/books.v1.BooksService/books",
        new Uint8Array([0, 0, 0, 0, 9, 1]),
      );
      assert.equal(answer.status, 200);
      assert.equal(answer.grpcStatus, String(Code.InvalidArgument));
      assert.match(answer.grpcMessage, /incomplete envelope/);
      await stillServes();
    });

    await t.step(
      "bytes that are not a protobuf message: INVALID_ARGUMENT (client input is never INTERNAL)",
      async () => {
        const answer = await rawCall(
          raw,
          "/books.v1.BooksService/books",
          new Uint8Array([0, 0, 0, 0, 3, 0xff, 0xff, 0xff]),
        );
        assert.equal(answer.grpcStatus, String(Code.InvalidArgument));
        assert.match(answer.grpcMessage, /^parse binary/);
        await stillServes();
      },
    );

    await t.step(
      "the same bytes over the Connect protocol: 400 invalid_argument on both ports, not a 500",
      async () => {
        const notProtobuf = new Uint8Array([0xff, 0xff, 0xff]);
        const onListener = await rawCall(
          raw,
          "/books.v1.BooksService/books",
          notProtobuf,
          "application/proto",
        );
        const res = await fetch(`${server.httpUrl}${BOOKS_PATH}`, {
          method: "POST",
          headers: { "content-type": "application/proto" },
          body: notProtobuf,
        });
        const onMainPort = { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
        for (const answer of [onListener, onMainPort]) {
          assert.equal(answer.status, 400);
          const error = JSON.parse(answer.body.toString());
          assert.equal(error.code, "invalid_argument");
          assert.match(error.message, /^parse binary/);
        }
        // A good request on the same connection still gets the catalogue.
        const ok = await rawCall(raw, "/books.v1.BooksService/books", new Uint8Array(0), {
          "content-type": "application/proto",
        });
        assert.equal(ok.status, 200);
        const shipped = await readCatalogue(DEFAULT_BOOKS);
        assert.equal(fromBinary(BooksResponseSchema, ok.body).book.length, shipped.length);
        await stillServes();
      },
    );

    await t.step("a message over 4 MiB: RESOURCE_EXHAUSTED (grpc-js)", async () => {
      // Field 15, length-delimited, just over the limit: a valid message the server must refuse.
      const size = MAX_MESSAGE_BYTES + 1;
      const header = Buffer.from([0x7a, ...varint(size)]);
      const payload = Buffer.concat([header, Buffer.alloc(size)]);
      const answer = await grpcJsUnary("/books.v1.BooksService/books", payload);
      assert.equal(answer.code, grpc.status.RESOURCE_EXHAUSTED);
      assert.match(answer.details, /larger than configured readMaxBytes 4194304/);
      // The same connection still carries calls: the refused body does not hold its window.
      assert.equal((await grpcJsUnary("/books.v1.BooksService/books", Buffer.alloc(0))).code, 0);
      await stillServes();
    });

    await t.step("unknown method and unknown service: UNIMPLEMENTED (grpc-js)", async () => {
      for (const path of ["/books.v1.BooksService/nope", "/no.such.Service/books"]) {
        const answer = await grpcJsUnary(path, Buffer.alloc(0));
        assert.equal(answer.code, grpc.status.UNIMPLEMENTED, path);
        assert.equal(answer.details, `Method not found: ${path}`);
      }
      await stillServes();
    });

    await t.step("unknown method over gRPC-Web and Connect: UNIMPLEMENTED / 404", async () => {
      const web = await rawCall(
        raw,
        "/no.such.Service/x",
        EMPTY_MESSAGE,
        "application/grpc-web+proto",
      );
      assert.equal(web.status, 200);
      assert.equal(web.grpcStatus, String(Code.Unimplemented));
      const connect = await rawCall(
        raw,
        "/no.such.Service/x",
        new TextEncoder().encode("{}"),
        "application/json",
      );
      assert.equal(connect.status, 404);
      // The catalogue code too, as every error carries it (docs/grpc.md).
      const { details, ...error } = JSON.parse(connect.body.toString());
      assert.deepEqual(error, {
        code: "unimplemented",
        message: "Method not found: /no.such.Service/x",
      });
      assert.deepEqual(details.map((d: { type: string; debug: unknown }) => [d.type, d.debug]), [
        ["google.rpc.ErrorInfo", { reason: "route-not-found", domain: "books-and-addresses" }],
      ]);
    });

    await t.step("an unsupported content type on a known method: HTTP 415", async () => {
      const answer = await rawCall(
        raw,
        "/books.v1.BooksService/books",
        EMPTY_MESSAGE,
        "text/plain",
      );
      assert.equal(answer.status, 415);
    });

    await t.step(
      "deadlines are honoured: a Watch with a 200 ms deadline ends DEADLINE_EXCEEDED",
      async () => {
        const started = Date.now();
        await assert.rejects(
          (async () => {
            for await (const _ of health.watch({ service: "" }, { timeoutMs: 200 })) { /* wait */ }
          })(),
          (e: unknown) => e instanceof ConnectError && e.code === Code.DeadlineExceeded,
        );
        assert.ok(Date.now() - started >= 150);
      },
    );

    await t.step(
      "the server itself ends a call at its grpc-timeout (no client timer)",
      async () => {
        const started = Date.now();
        const answer = await rawCall(raw, "/grpc.health.v1.Health/Watch", EMPTY_MESSAGE, {
          "grpc-timeout": "200m",
        });
        assert.ok(Date.now() - started >= 150);
        assert.equal(answer.grpcStatus, String(Code.DeadlineExceeded));
        // The current status was streamed before the deadline: one 7-byte message (SERVING).
        assert.deepEqual([...answer.body], [0, 0, 0, 0, 2, 8, 1]);
      },
    );

    await t.step("a grpc-js deadline on a server stream: DEADLINE_EXCEEDED", async () => {
      const answer = await grpcJsUnary(
        "/grpc.health.v1.Health/Watch",
        Buffer.alloc(0),
        new Date(Date.now() + 100),
      );
      assert.equal(answer.code, grpc.status.DEADLINE_EXCEEDED);
    });

    await t.step(
      "main port: a Connect body over 4 MiB is RESOURCE_EXHAUSTED",
      async () => {
        const size = MAX_MESSAGE_BYTES + 1;
        const body = Buffer.concat([Buffer.from([0x7a, ...varint(size)]), Buffer.alloc(size)]);
        const res = await fetch(`${server.httpUrl}/books.v1.BooksService/books`, {
          method: "POST",
          headers: { "content-type": "application/proto" },
          body,
        });
        assert.equal(res.status, 429); // the Connect protocol's HTTP status for resource_exhausted
        assert.equal((await res.json()).code, "resource_exhausted");
        await stillServes();
      },
    );
  } finally {
    raw.destroy();
    await server.close();
  }
});

function varint(value: number): number[] {
  const bytes: number[] = [];
  while (value > 0x7f) {
    bytes.push((value & 0x7f) | 0x80);
    value >>>= 7;
  }
  bytes.push(value);
  return bytes;
}

Deno.test("connections over the limit are closed; the ones within keep working", async () => {
  const listener = await startTestListener({ maxConnections: 2 });
  const clients = [0, 1, 2].map(() => rawSession(listener.url));
  try {
    const closed = new Promise((resolve) => clients[2]!.once("close", resolve));
    for (const client of clients.slice(0, 2)) {
      const answer = await rawCall(client, "/books.v1.BooksService/books", EMPTY_MESSAGE);
      assert.equal(answer.grpcStatus, "0");
      const response = fromBinary(BooksResponseSchema, answer.body.subarray(5));
      assert.deepEqual(response.book.map((b) => b.title), ["Kindred"]);
    }
    await closed;
    listener.flush();
    const refused = listener.logs.filter((l) => l.msg === "grpc connections refused");
    assert.deepEqual(refused.map((l) => l.refused), [{ "connection-limit": 1 }]);
  } finally {
    for (const client of clients) client.destroy();
    await listener.shutdown();
  }
});
