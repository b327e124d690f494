import { buildSchema, type GraphQLFieldConfig, GraphQLObjectType, GraphQLSchema } from "graphql";
import type { Book } from "../lib/schemas.ts";
import type { Access } from "../security/access.ts";
import type { BookStore } from "../store/books.ts";
import { ADDRESS_MUTATIONS, ADDRESS_QUERIES, type AddressRootField } from "./address_fields.ts";
import { ADDRESS_SUBSCRIPTIONS } from "./address_events.ts";

/**
 * The books part of the schema exactly as the interface fixes it (docs/graphql.md). Every field
 * of it is a pure function of the catalogue snapshot a request reads; routes.ts caches results of
 * variable-free operations that select nothing else (CATALOGUE_FIELDS).
 */
const BOOKS_SDL = `
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

/**
 * What a call of each root field needs (security/access.ts), decided per operation before it
 * runs (graphql/operation_access.ts). The books and the meta fields need what the whole endpoint
 * needed before the address book joined it: nothing, or `books:read` with `AUTH_BOOKS=required`.
 * A root field missing here needs a valid token whatever it does (deny by default), and
 * tests/graphql/graphql_addresses_test.ts checks that none is missing.
 */
export const ROOT_ACCESS: ReadonlyMap<string, Access> = new Map<string, Access>([
  ["books", "books:read"],
  ["__typename", "books:read"],
  ["__schema", "books:read"],
  ["__type", "books:read"],
  ...accessOf(ADDRESS_QUERIES),
  ...accessOf(ADDRESS_MUTATIONS),
  ...accessOf(ADDRESS_SUBSCRIPTIONS),
]);

/**
 * Root fields whose result is a pure function of the catalogue snapshot (and of the schema): an
 * operation that selects nothing else has one result per snapshot, which routes.ts caches.
 * Everything of the address book is per caller and per moment, so never.
 */
export const CATALOGUE_FIELDS: ReadonlySet<string> = new Set([
  "books",
  "__typename",
  "__schema",
  "__type",
]);

function accessOf(
  fields: Readonly<Record<string, Pick<AddressRootField, "access">>>,
): [string, Access][] {
  return Object.entries(fields).map(([name, field]) => [name, field.access]);
}

// deno-lint-ignore no-explicit-any
function configs(fields: Readonly<Record<string, { config: GraphQLFieldConfig<any, any, any> }>>) {
  return Object.fromEntries(Object.entries(fields).map(([name, field]) => [name, field.config]));
}

/**
 * Builds the executable schema (validated once here, not per request): the books query from
 * BOOKS_SDL as it is, and the address book's queries and mutations (graphql/address_fields.ts).
 */
export function createSchema(): GraphQLSchema {
  const books = buildSchema(BOOKS_SDL).getQueryType()!.toConfig();
  return new GraphQLSchema({
    query: new GraphQLObjectType({
      ...books,
      fields: { ...books.fields, ...configs(ADDRESS_QUERIES) },
    }),
    mutation: new GraphQLObjectType({ name: "Mutation", fields: configs(ADDRESS_MUTATIONS) }),
    subscription: new GraphQLObjectType({
      name: "Subscription",
      fields: configs(ADDRESS_SUBSCRIPTIONS),
    }),
  });
}

/** The root value: the root fields without a resolver of their own read it. */
interface BooksRoot {
  books: readonly Book[];
}

/**
 * The root value one request executes against: `books` is the catalogue snapshot the request
 * read from the store (in memory, loaded from KV once at start-up), so no field resolution
 * touches KV; every field of the books uses the default property resolver on the same frozen
 * objects REST serialises. A value, not a function: graphql-js calls a function it finds there,
 * graphql-jit reads it as it is.
 */
export function booksRoot(catalogue: ReturnType<BookStore["list"]>): BooksRoot {
  return { books: catalogue };
}
