import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Book } from "../../lib/schemas.ts";
import type { BookStore } from "../../store/books.ts";
import { type BooksResponse, BooksResponseSchema, BooksService } from "../gen/books/v1/books_pb.ts";

/** The protobuf form of the catalogue: the same books, same order as `GET /rest/books`. */
export function booksResponse(books: readonly Book[]): BooksResponse {
  return create(BooksResponseSchema, {
    book: books.map((b) => ({
      title: b.title,
      year: b.year,
      author: { firstName: b.author.firstName, lastName: b.author.lastName },
    })),
  });
}

/**
 * `books.v1.BooksService` over the store. The catalogue is loaded once and never changes while
 * the process runs, so the response message is built once per catalogue array, not per call.
 */
export function booksService(store: BookStore): ServiceImpl<typeof BooksService> {
  let cached: { source: readonly Book[]; response: BooksResponse } | undefined;
  return {
    books() {
      const source = store.list();
      if (cached?.source !== source) cached = { source, response: booksResponse(source) };
      return cached.response;
    },
  };
}
