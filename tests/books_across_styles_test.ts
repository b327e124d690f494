import assert from "node:assert/strict";
import type { BookProto } from "../rpc/gen/books/v1/books_pb.ts";
import { graphql } from "./support/requests.ts";
import {
  booksClient,
  connectTransport,
  grpcJsClient,
  grpcJsUnary,
  grpcTransport,
} from "./support/rpc_clients.ts";
import { startTestServer } from "./support/server.ts";

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

    const graphqlRes = await graphql(server.httpUrl, { query: QUERY });
    assert.equal(graphqlRes.status, 200);
    const graphqlBody = await graphqlRes.json();
    assert.equal(graphqlBody.errors, undefined);

    const native = await booksClient(grpcTransport(server.grpcUrl!)).books({});
    const connect = await booksClient(connectTransport(server.httpUrl, "1.1")).books({});
    const grpcJs = await grpcJsUnary<{ book: Book[] }>(grpcJsClient(server.grpcUrl!), "books");
    assert.ifError(grpcJs.error);
    const independent = grpcJs.response!;

    const answers: [string, Book[]][] = [
      ["GraphQL POST /graphql", normal(graphqlBody.data.books)],
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
    await server.close();
  }
});
