import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { type AppEnv, preEncoded } from "../lib/http/hono_env.ts";
import { jsonAnswer, negotiateJson } from "../lib/http/negotiate.ts";
import { GATE_RESPONSES, jsonContent } from "../lib/http/openapi.ts";
import { errorResponse } from "../lib/schemas.ts";
import { routeAccess } from "../security/access.ts";
import {
  ADDRESS_ROUTE,
  ADDRESSES_PATH,
  BOOK_ROUTE,
  BOOKS_PATH,
  BOOKS_RPC_PATH,
  DOCS_PATH,
  ENTRY_PATH,
  ERRORS_DOC_PATH,
  GRAPHQL_PATH,
  GRAPHQL_SCHEMA_PATH,
  OPENAPI_PATH,
} from "../lib/paths.ts";

const link = (href: string, title: string, templated = false) =>
  templated ? { href, title, templated } : { href, title };

/** Links to every resource (HAL-style `_links`; `templated` marks an RFC 6570 template). */
const ENTRY_LINKS = {
  self: link(ENTRY_PATH, "This entry point"),
  books: link(BOOKS_PATH, "Every book, ascending id"),
  book: link(BOOK_ROUTE, "One book", true),
  addresses: link(ADDRESSES_PATH, "The caller's addresses, one page at a time"),
  address: link(ADDRESS_ROUTE, "One address (GET, PUT, PATCH, DELETE)", true),
  graphql: link(GRAPHQL_PATH, "GraphQL endpoint (POST; GraphiQL in a browser)"),
  graphqlSchema: link(GRAPHQL_SCHEMA_PATH, "The GraphQL schema (SDL)"),
  grpc: link(BOOKS_RPC_PATH, "Books over Connect and gRPC-Web (POST)"),
  openapi: link(OPENAPI_PATH, "OpenAPI 3.1 description of the REST API"),
  docs: link(DOCS_PATH, "Interactive API reference"),
  errors: link(ERRORS_DOC_PATH, "Error codes"),
} as const;

const LinkSchema = z.object({
  href: z.string(),
  title: z.string(),
  templated: z.boolean().optional(),
});

const entryPoint = createRoute({
  ...routeAccess("public"),
  method: "get",
  path: ENTRY_PATH,
  operationId: "getEntryPoint",
  tags: ["service"],
  summary: "Entry point: links to every resource",
  description: "HAL-style `_links` to every resource of the API (`templated` marks an RFC 6570 " +
    "template), so a client needs to know only this URI.",
  responses: {
    200: {
      description: "Links; clients need to know only this URI.",
      content: jsonContent(z.object({ _links: z.record(z.string(), LinkSchema) })),
    },
    406: errorResponse("`not-acceptable`"),
    ...GATE_RESPONSES,
  },
});

const BODY = JSON.stringify({ _links: ENTRY_LINKS });

/** `GET /`: the API's entry point. */
export function homeRoutes(app: OpenAPIHono<AppEnv>): void {
  app.openapi(entryPoint, (c) => {
    const type = negotiateJson(c.req.header("accept"));
    return preEncoded(
      jsonAnswer(BODY, {
        type,
        requestId: c.get("requestId"),
        headers: { "cache-control": "max-age=3600" },
      }),
    );
  });
}
