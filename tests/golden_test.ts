import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { type BookProto, BooksService } from "../rpc/gen/books/v1/books_pb.ts";
import { startTestServer } from "./support/server.ts";

const BOOKS_PROTO = new URL("../rpc/proto/books/v1/books.proto", import.meta.url).pathname;
const QUERY = "{ books { title year author { firstName lastName } } }";

interface Book {
  title: string;
  year: number;
  author: { firstName: string; lastName: string };
}

/** Only the fields every style shares, in a fixed member order. */
function normal(books: Book[]): Book[] {
  return books.map((b) => ({
    title: b.title,
    year: b.year,
    author: { firstName: b.author.firstName, lastName: b.author.lastName },
  }));
}

/** Protobuf messages as plain books; a missing author cannot match any REST book. */
function fromProto(books: BookProto[]): Book[] {
  return normal(books.map((b) => ({
    title: b.title,
    year: b.year,
    author: {
      firstName: b.author?.firstName ?? "(no author)",
      lastName: b.author?.lastName ?? "(no author)",
    },
  })));
}

Deno.test("golden: REST, GraphQL and gRPC return the same books in the same order", async () => {
  const server = await startTestServer();
  const session = new Http2SessionManager(server.grpcUrl!);
  const definition = protoLoader.loadSync(BOOKS_PROTO, { keepCase: true, defaults: true });
  // deno-lint-ignore no-explicit-any
  const pkg = grpc.loadPackageDefinition(definition) as any;
  const grpcJs = new pkg.books.v1.BooksService(
    new URL(server.grpcUrl!).host,
    grpc.credentials.createInsecure(),
  );
  try {
    const restRes = await fetch(`${server.httpUrl}/rest/books`);
    assert.equal(restRes.status, 200);
    const rest = normal(await restRes.json());
    assert.ok(rest.length >= 25, "the shipped catalogue");
    assert.deepEqual(
      rest.map((b) => b.title),
      [...new Set(rest.map((b) => b.title))],
      "titles are distinct, so order differences cannot hide",
    );

    const graphqlRes = await fetch(`${server.httpUrl}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: QUERY }),
    });
    assert.equal(graphqlRes.status, 200);
    const graphql = await graphqlRes.json();
    assert.equal(graphql.errors, undefined);

    const native = await createClient(
      BooksService,
      createGrpcTransport({ baseUrl: server.grpcUrl!, sessionManager: session }),
    ).books({});
    const connect = await createClient(
      BooksService,
      createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" }),
    ).books({});
    const independent = await new Promise<{ book: Book[] }>((resolve, reject) =>
      grpcJs.books(
        {},
        (error: unknown, res: { book: Book[] }) => error ? reject(error) : resolve(res),
      )
    );

    const answers: [string, Book[]][] = [
      ["GraphQL POST /graphql", normal(graphql.data.books)],
      [
        "gRPC on the gRPC listener (Connect client)",
        fromProto(native.book),
      ],
      [
        "Connect on the main port",
        fromProto(connect.book),
      ],
      ["gRPC on the gRPC listener (@grpc/grpc-js)", normal(independent.book)],
    ];
    for (const [name, books] of answers) assert.deepEqual(books, rest, name);
  } finally {
    grpcJs.close();
    session.abort();
    await server.close();
  }
});
