import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { type AppEnv, preEncoded } from "../lib/http/hono_env.ts";
import { jsonHeaders, negotiateJson } from "../lib/http/negotiate.ts";
import { GATE_RESPONSES, jsonContent } from "../lib/http/openapi.ts";
import { errorResponse } from "../lib/schemas.ts";
import { routeAccess } from "../security/access.ts";

const link = (href: string, title: string, templated = false) =>
  templated ? { href, title, templated } : { href, title };

/** Links to every resource (HAL-style `_links`; `templated` marks an RFC 6570 template). */
export const ENTRY_LINKS = {
  self: link("/", "This entry point"),
  books: link("/rest/books", "Every book, ascending id"),
  book: link("/api/book/{id}", "One book", true),
  addresses: link("/addresses", "The caller's addresses, one page at a time"),
  address: link("/addresses/{id}", "One address (GET, PUT, PATCH, DELETE)", true),
  graphql: link("/graphql", "GraphQL endpoint (POST; GraphiQL in a browser)"),
  grpc: link("/books.v1.BooksService/books", "Books over Connect and gRPC-Web (POST)"),
  openapi: link("/openapi.json", "OpenAPI 3.1 description of the REST API"),
  docs: link("/docs", "Interactive API reference"),
  errors: link("/docs/errors", "Error codes"),
} as const;

const LinkSchema = z.object({
  href: z.string(),
  title: z.string(),
  templated: z.boolean().optional(),
});

const entryPoint = createRoute({
  ...routeAccess("public"),
  method: "get",
  path: "/",
  operationId: "getEntryPoint",
  tags: ["service"],
  summary: "Entry point: links to every resource",
  description: "HAL-style `_links` to every resource of the API (`templated` marks an RFC 6570 " +
    "template), so a client needs to know only this URI (spec 9, rule 4).",
  responses: {
    200: {
      description: "Links; clients need to know only this URI (spec 9, rule 4).",
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
      new Response(BODY, {
        headers: { ...jsonHeaders(type, c.get("requestId")), "cache-control": "max-age=3600" },
      }),
    );
  });
}
