/**
 * lib/paths.ts spells the books call out, as lib/ imports nothing above it: it must stay the path
 * the wire contract gives the call (the generated descriptor of rpc/proto/books/v1/books.proto),
 * or the gRPC listener and the entry point's link would name a call no client makes.
 */
import assert from "node:assert/strict";
import { BOOKS_RPC_PATH } from "../../lib/paths.ts";
import { BooksService } from "../../rpc/gen/books/v1/books_pb.ts";

Deno.test("BOOKS_RPC_PATH is the path of the generated books method", () => {
  assert.equal(BOOKS_RPC_PATH, `/${BooksService.typeName}/${BooksService.method.books.name}`);
});
