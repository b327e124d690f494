/**
 * Every path this server answers at, in one place: the routes are defined at them and the entry
 * point links them. Here rather than in a protocol folder because the entry point (routes/) links
 * GraphQL's and the RPC's, and protocol folders do not import each other. Like all of lib/, it imports no other folder of the project.
 */

/** The entry point: links to everything below. */
export const ENTRY_PATH = "/";

/** The catalogue, ascending id. */
export const BOOKS_PATH = "/rest/books";
/** One book: the template, and the prefix its id follows. */
export const BOOK_ROUTE = "/api/book/{id}";
export const BOOK_PATH_PREFIX = BOOK_ROUTE.slice(0, BOOK_ROUTE.indexOf("{"));

/** The caller's addresses, one of them, and all of them at once. */
export const ADDRESSES_PATH = "/addresses";
export const ADDRESS_ROUTE = `${ADDRESSES_PATH}/{id}`;
export const ADDRESSES_EXPORT_PATH = `${ADDRESSES_PATH}/export`;
/** The caller's changes as they are committed (Server-Sent Events). */
export const ADDRESSES_EVENTS_PATH = `${ADDRESSES_PATH}/events`;

/** GraphQL: operations by POST, GraphiQL by a browser's GET, GraphiQL's files, the schema. */
export const GRAPHQL_PATH = "/graphql";
export const GRAPHQL_ASSETS_PATH = `${GRAPHQL_PATH}/assets`;
/** The GraphQL schema as SDL (published like the OpenAPI document, unless introspection is off). */
export const GRAPHQL_SCHEMA_PATH = `${GRAPHQL_PATH}/schema.graphql`;

/**
 * The books call the entry point links (Connect and gRPC-Web on both ports, gRPC on the gRPC
 * listener): `/` + the service's full name + `/` + the method, as the wire contract
 * (rpc/proto/books/v1/books.proto) names them. Spelled out because lib/ imports nothing above it;
 * tests/lib/paths_test.ts holds it to the generated service descriptor, so it cannot drift from
 * what clients call.
 */
export const BOOKS_RPC_PATH = "/books.v1.BooksService/books";

/** The OpenAPI document, the API reference page and its files, the error-code reference. */
export const OPENAPI_PATH = "/openapi.json";
export const DOCS_PATH = "/docs";
export const DOCS_ASSETS_PATH = `${DOCS_PATH}/assets`;
export const ERRORS_DOC_PATH = `${DOCS_PATH}/errors`;

/** The probes: liveness and readiness. */
export const LIVENESS_PATH = "/healthz";
export const READINESS_PATH = "/readyz";
