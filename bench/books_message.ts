// The BooksResponse message every gRPC peer answers with, encoded once from the catalogue file:
// the bytes this project's server sends for `books.v1.BooksService/books` (the bench checks every
// server's message against the others').
import { create, toBinary } from "@bufbuild/protobuf";
import { BooksResponseSchema } from "../rpc/gen/books/v1/books_pb.ts";

interface Book {
  id: number;
  title: string;
  year: number;
  author: { firstName: string; lastName: string };
}

/** The protobuf bytes (no gRPC frame prefix) of the catalogue in BOOKS_FILE, ascending id. */
export async function booksMessage(booksFile: string): Promise<Uint8Array<ArrayBuffer>> {
  const books = (JSON.parse(await Deno.readTextFile(booksFile)) as Book[])
    .toSorted((a, b) => a.id - b.id);
  const bytes = toBinary(
    BooksResponseSchema,
    create(BooksResponseSchema, {
      book: books.map((b) => ({ title: b.title, year: b.year, author: b.author })),
    }),
  );
  return new Uint8Array(bytes);
}
