import { create, toBinary } from "@bufbuild/protobuf";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
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

/** The answer to `books` for one catalogue snapshot: the message, and its encoded gRPC frame. */
interface BooksAnswer {
  message: BooksResponse;
  /** The message encoded and enveloped (uncompressed), as a gRPC response body carries it. */
  frame(): Uint8Array<ArrayBuffer>;
}

// The store's snapshot is a frozen array that never changes while the process runs: the answer
// is built once per snapshot, for Connect's handler and the listener's fast path alike.
const answers = new WeakMap<readonly Book[], BooksAnswer>();

/** The answer to `books` for the store's current catalogue. */
export function booksAnswer(store: BookStore): BooksAnswer {
  const source = store.list();
  let answer = answers.get(source);
  if (answer === undefined) {
    const message = booksResponse(source);
    let frame: Uint8Array<ArrayBuffer> | undefined;
    answer = {
      message,
      frame: () => (frame ??= encodeEnvelope(0, toBinary(BooksResponseSchema, message))),
    };
    answers.set(source, answer);
  }
  return answer;
}

/** `books.v1.BooksService` over the store. */
export function booksService(store: BookStore): ServiceImpl<typeof BooksService> {
  return { books: () => booksAnswer(store).message };
}
