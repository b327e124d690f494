/**
 * Every path this server answers at, in one place: the routes are defined at them, the entry
 * point links them, and the answers in front of the router (routes/books_front.ts, the gRPC fast
 * path) recognise their requests by them. Here rather than
 * in a protocol folder because the entry point (routes/) links GraphQL's and the RPC's, and
 * protocol folders do not import each other.
 */
import { BooksService } from "../rpc/gen/books/v1/books_pb.ts";

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

/** GraphQL: operations by POST, GraphiQL by a browser's GET, GraphiQL's files, the schema. */
export const GRAPHQL_PATH = "/graphql";
export const GRAPHQL_ASSETS_PATH = `${GRAPHQL_PATH}/assets`;
/** The GraphQL schema as SDL (published like the OpenAPI document, unless introspection is off). */
export const GRAPHQL_SCHEMA_PATH = `${GRAPHQL_PATH}/schema.graphql`;

/**
 * The books call (Connect and gRPC-Web on both ports, gRPC on the gRPC listener), named by the
 * generated service descriptor (the wire contract), so it cannot drift from what clients call.
 */
export const BOOKS_RPC_PATH = `/${BooksService.typeName}/${BooksService.method.books.name}`;

/** The OpenAPI document, the API reference page and its files, the error-code reference. */
export const OPENAPI_PATH = "/openapi.json";
export const DOCS_PATH = "/docs";
export const DOCS_ASSETS_PATH = `${DOCS_PATH}/assets`;
export const ERRORS_DOC_PATH = `${DOCS_PATH}/errors`;

/** The probes: liveness and readiness. */
export const LIVENESS_PATH = "/healthz";
export const READINESS_PATH = "/readyz";
