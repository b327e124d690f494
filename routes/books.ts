import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { z } from "@hono/zod-openapi";
import { AppError } from "../lib/errors.ts";
import { BookSchema, errorResponse, IdParamSchema } from "../lib/schemas.ts";
import type { BookStore } from "../store/books.ts";
import { type AppEnv, preEncoded } from "../lib/app_env.ts";
import { jsonHeaders, negotiateJson } from "../lib/negotiate.ts";

const listBooks = createRoute({
  method: "get",
  path: "/rest/books",
  summary: "List all books (ascending id)",
  responses: {
    200: {
      description: "Every book of the catalogue",
      content: { "application/json": { schema: z.array(BookSchema) } },
    },
  },
});

const getBook = createRoute({
  method: "get",
  path: "/api/book/{id}",
  summary: "Get one book",
  request: { params: IdParamSchema },
  responses: {
    200: { description: "The book", content: { "application/json": { schema: BookSchema } } },
    400: errorResponse("`invalid-parameter`: id is not a positive integer"),
    404: errorResponse("`book-not-found`"),
  },
});

/** REST routes of the book catalogue. Bodies are pre-encoded by the store. */
export function booksRoutes(books: BookStore, app: OpenAPIHono<AppEnv>): void {
  app.openapi(listBooks, (c) => {
    const type = negotiateJson(c.req.header("accept"));
    return preEncoded(
      new Response(books.listJson(), { headers: jsonHeaders(type, c.get("requestId")) }),
    );
  });

  app.openapi(getBook, (c) => {
    const { id } = c.req.valid("param");
    const type = negotiateJson(c.req.header("accept"));
    const json = books.getJson(id);
    if (json === undefined) throw new AppError("book-not-found", `No book has id ${id}.`);
    return preEncoded(new Response(json, { headers: jsonHeaders(type, c.get("requestId")) }));
  });
}
