import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import { z } from "@hono/zod-openapi";
import { AppError } from "../lib/errors.ts";
import { BookSchema, errorResponse, IdParamSchema } from "../lib/schemas.ts";
import {
  CACHED_HEADERS,
  IfNoneMatchHeaderSchema,
  jsonContent,
  NOT_MODIFIED,
  SCOPED_RESPONSES,
} from "../lib/http/openapi.ts";
import type { BookStore } from "../store/books.ts";
import { type AppEnv, preEncoded } from "../lib/http/hono_env.ts";
import { negotiateJson } from "../lib/http/negotiate.ts";
import { BOOKS_CACHE_CONTROL, conditionalJson } from "../lib/http/conditional.ts";
import { routeAccess } from "../security/access.ts";
import { BOOK_ROUTE, BOOKS_PATH } from "../lib/paths.ts";

/**
 * The answer to a GET of a catalogue representation (the list or one book), the one both the
 * routes and the answers in front of the router give: the bytes and ETag the store encoded once,
 * the negotiated `type`, and a 304 when `If-None-Match` matches.
 */
export function catalogueAnswer(
  encoded: { body: string; etag: string },
  request: { type: string; requestId: string; ifNoneMatch: string | null | undefined },
): Response {
  return conditionalJson(encoded.body, {
    type: request.type,
    etag: encoded.etag,
    cacheControl: BOOKS_CACHE_CONTROL,
    requestId: request.requestId,
    ifNoneMatch: request.ifNoneMatch,
  });
}

const listBooks = createRoute({
  ...routeAccess("books:read"),
  method: "get",
  path: BOOKS_PATH,
  operationId: "listBooks",
  tags: ["books"],
  summary: "List all books (ascending id)",
  description: "The whole catalogue, ascending id, with a strong `ETag`; `If-None-Match` with " +
    "that ETag answers 304. Needs the scope `books:read` only with `AUTH_BOOKS=required`.",
  request: { headers: IfNoneMatchHeaderSchema },
  responses: {
    200: {
      description: "Every book of the catalogue",
      headers: CACHED_HEADERS,
      content: jsonContent(z.array(BookSchema)),
    },
    304: NOT_MODIFIED,
    406: errorResponse("`not-acceptable`"),
    ...SCOPED_RESPONSES,
  },
});

const getBook = createRoute({
  ...routeAccess("books:read"),
  method: "get",
  path: BOOK_ROUTE,
  operationId: "getBook",
  tags: ["books"],
  summary: "Get one book",
  description: "One book of the catalogue by its id, with a strong `ETag`; `If-None-Match` " +
    "with that ETag answers 304. Needs the scope `books:read` only with `AUTH_BOOKS=required`.",
  request: { params: IdParamSchema, headers: IfNoneMatchHeaderSchema },
  responses: {
    200: { description: "The book", headers: CACHED_HEADERS, content: jsonContent(BookSchema) },
    304: NOT_MODIFIED,
    406: errorResponse("`not-acceptable`"),
    400: errorResponse("`invalid-parameter`: id is not a positive integer"),
    404: errorResponse("`book-not-found`"),
    ...SCOPED_RESPONSES,
  },
});

/** REST routes of the book catalogue. Bodies are pre-encoded by the store. */
export function booksRoutes(books: BookStore, app: OpenAPIHono<AppEnv>): void {
  app.openapi(listBooks, (c) => {
    const encoded = { body: books.listJson(), etag: books.listEtag() };
    return preEncoded(catalogueAnswer(encoded, {
      type: negotiateJson(c.req.header("accept")),
      requestId: c.get("requestId"),
      ifNoneMatch: c.req.header("if-none-match"),
    }));
  });

  app.openapi(getBook, (c) => {
    const { id } = c.req.valid("param");
    const type = negotiateJson(c.req.header("accept"));
    const body = books.getJson(id);
    if (body === undefined) throw new AppError("book-not-found", `No book has id ${id}.`);
    return preEncoded(catalogueAnswer({ body, etag: books.getEtag(id)! }, {
      type,
      requestId: c.get("requestId"),
      ifNoneMatch: c.req.header("if-none-match"),
    }));
  });
}
