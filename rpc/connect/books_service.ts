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

// The store's snapshot is a frozen array that never changes while the process runs: the answer
// is built once per snapshot, and frozen, so the RPC path encodes it once too (frozen answers
// are encoded once per message, rpc/unary/unary_call.ts).
const answers = new WeakMap<readonly Book[], BooksResponse>();

/** The answer to `books` for the store's current catalogue, deeply frozen. */
export function booksAnswer(store: BookStore): BooksResponse {
  const source = store.list();
  let answer = answers.get(source);
  if (answer === undefined) {
    answer = deepFreeze(booksResponse(source));
    answers.set(source, answer);
  }
  return answer;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

/** `books.v1.BooksService` over the store. */
export function booksService(store: BookStore): ServiceImpl<typeof BooksService> {
  return { books: () => booksAnswer(store) };
}
