import { buildSchema, type GraphQLSchema } from "graphql";
import type { Book } from "../lib/schemas.ts";
import type { BookStore } from "../store/books.ts";

/**
 * The schema exactly as the spec states it (4.2): one query, no mutation or subscription.
 * Every field is a pure function of the catalogue snapshot a request reads; routes.ts caches
 * results of variable-free operations on that basis. A field that reads anything else (time,
 * the address book, the caller) must revisit graphql/result_cache.ts.
 */
export const BOOKS_SDL = `
"A book of the catalogue."
type Book {
  title: String!
  year: Int!
  author: Author!
}

"The author of a book."
type Author {
  firstName: String!
  lastName: String!
}

type Query {
  "Every book of the catalogue, in the same order as GET /rest/books (ascending id)."
  books: [Book]
}
`;

/** Builds the executable schema (validated once here, not per request). */
export function createBooksSchema(): GraphQLSchema {
  return buildSchema(BOOKS_SDL);
}

/** Root resolvers. */
export interface BooksRoot {
  books(): readonly Book[];
}

/**
 * The root value one request executes against: `books` returns the catalogue snapshot the
 * request read from the store (in memory, loaded from KV once at start-up), so no field
 * resolution touches KV; nested fields use graphql-js's default property resolvers on the same
 * frozen objects REST serialises.
 */
export function booksRoot(catalogue: ReturnType<BookStore["list"]>): BooksRoot {
  return { books: () => catalogue };
}
