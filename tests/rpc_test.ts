import assert from "node:assert/strict";
import { toJson } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { BooksResponseSchema, BooksService } from "../rpc/gen/books/v1/books_pb.ts";
import { startTestServer } from "./support/server.ts";

const BOOKS_PROTO = new URL("../rpc/proto/books/v1/books.proto", import.meta.url).pathname;

interface RestBook {
  id: number;
  title: string;
  year: number;
  author: { firstName: string; lastName: string };
}

/** What a protobuf client sees for the REST list: the same books, same order, no id. */
function asProto(books: RestBook[]) {
  return books.map((b) => ({
    title: b.title,
    year: b.year,
    author: { firstName: b.author.firstName, lastName: b.author.lastName },
  }));
}

type BooksClient = grpc.Client & {
  books(
    request: object,
    metadata: grpc.Metadata,
    callback: (error: grpc.ServiceError | null, response: { book: unknown[] }) => void,
  ): grpc.ClientUnaryCall;
};

function grpcJsClient(grpcUrl: string): BooksClient {
  const definition = protoLoader.loadSync(BOOKS_PROTO, { keepCase: true, defaults: true });
  // deno-lint-ignore no-explicit-any
  const pkg = grpc.loadPackageDefinition(definition) as any;
  return new pkg.books.v1.BooksService(new URL(grpcUrl).host, grpc.credentials.createInsecure());
}

Deno.test("books.v1.BooksService/books over every protocol and both ports", async (t) => {
  const server = await startTestServer();
  // HTTP/2 sessions are closed by the client before the server stops (see docs/grpc.md:
  // Deno 2.9.6's node:http2 client can crash when it receives a GOAWAY).
  const sessions = [
    new Http2SessionManager(server.grpcUrl!),
    new Http2SessionManager(server.grpcUrl!),
    new Http2SessionManager(server.grpcUrl!),
  ];
  try {
    const rest = await (await fetch(`${server.httpUrl}/rest/books`)).json() as RestBook[];
    const expected = asProto(rest);
    assert.ok(expected.length >= 25);

    const transports: [string, Transport][] = [
      [
        "gRPC on the gRPC listener (HTTP/2 cleartext)",
        createGrpcTransport({ baseUrl: server.grpcUrl!, sessionManager: sessions[0] }),
      ],
      [
        "gRPC-Web on the gRPC listener (HTTP/2)",
        // Without response compression: Deno 2.9.6's node:http2 *client* reports a premature
        // close when it decompresses slowly (nodejs/node#65677); the server is not involved.
        createGrpcWebTransport({
          baseUrl: server.grpcUrl!,
          httpVersion: "2",
          sessionManager: sessions[1],
          acceptCompression: [],
        }),
      ],
      [
        "Connect on the gRPC listener (HTTP/2)",
        createConnectTransport({
          baseUrl: server.grpcUrl!,
          httpVersion: "2",
          sessionManager: sessions[2],
        }),
      ],
      [
        "Connect on the main port (HTTP/1.1)",
        createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" }),
      ],
      [
        "Connect with JSON on the main port",
        createConnectTransport({
          baseUrl: server.httpUrl,
          httpVersion: "1.1",
          useBinaryFormat: false,
        }),
      ],
      [
        "gRPC-Web on the main port (HTTP/1.1)",
        createGrpcWebTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" }),
      ],
    ];
    for (const [name, transport] of transports) {
      await t.step(`${name}: the REST catalogue, same order`, async () => {
        let header: Headers | undefined;
        const response = await createClient(BooksService, transport).books({}, {
          headers: { "x-request-id": "rpc-test-1" },
          onHeader: (h) => (header = h),
        });
        assert.deepEqual(toJson(BooksResponseSchema, response), { book: expected });
        assert.equal(header?.get("x-request-id"), "rpc-test-1");
      });
    }

    await t.step("@grpc/grpc-js with @grpc/proto-loader (independent implementation)", async () => {
      const client = grpcJsClient(server.grpcUrl!);
      try {
        const metadata = new grpc.Metadata();
        metadata.set("x-request-id", "grpc-js-1");
        let echoed: unknown;
        const response = await new Promise<{ book: unknown[] }>((resolve, reject) => {
          const call = client.books(
            {},
            metadata,
            (error, res) => error ? reject(error) : resolve(res),
          );
          call.on("metadata", (m: grpc.Metadata) => (echoed = m.get("x-request-id")[0]));
        });
        assert.deepEqual(response.book, expected);
        assert.equal(echoed, "grpc-js-1");
      } finally {
        client.close();
      }
    });

    await t.step("a Connect GET (browser- and cache-friendly) on the main port", async () => {
      const res = await fetch(
        `${server.httpUrl}/books.v1.BooksService/books?connect=v1&encoding=json&message=%7B%7D`,
      );
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "application/json");
      assert.match(res.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
      assert.deepEqual(await res.json(), { book: expected });
    });

    await t.step("a Connect POST with curl-style JSON on the main port", async () => {
      const res = await fetch(`${server.httpUrl}/books.v1.BooksService/books`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { book: expected });
    });

    await t.step("main port: REST-style 405 with Allow and 404 around the procedure", async () => {
      const put = await fetch(`${server.httpUrl}/books.v1.BooksService/books`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      assert.equal(put.status, 405);
      assert.equal(put.headers.get("allow"), "GET, HEAD, POST, OPTIONS");
      assert.equal((await put.json()).errors[0].error, "method-not-allowed");
      const unknown = await fetch(`${server.httpUrl}/books.v1.BooksService/nope`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      assert.equal(unknown.status, 404);
      assert.equal((await unknown.json()).errors[0].error, "route-not-found");
    });

    await t.step(
      "main port: native gRPC is refused (415), it needs the gRPC listener",
      async () => {
        const res = await fetch(`${server.httpUrl}/books.v1.BooksService/books`, {
          method: "POST",
          headers: { "content-type": "application/grpc" },
          body: new Uint8Array(5),
        });
        assert.equal(res.status, 415);
        await res.body?.cancel();
      },
    );

    await t.step(
      "main port: a Connect call with a bad JSON body is INVALID_ARGUMENT (400)",
      async () => {
        const res = await fetch(`${server.httpUrl}/books.v1.BooksService/books`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"unterminated',
        });
        assert.equal(res.status, 400);
        assert.equal((await res.json()).code, "invalid_argument");
      },
    );
  } finally {
    for (const session of sessions) session.abort();
    await server.close();
  }
});
