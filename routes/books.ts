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
import { contentEtag } from "../lib/http/etag.ts";
import { routeAccess } from "../security/access.ts";
import { BOOK_ROUTE, BOOKS_PATH } from "../lib/paths.ts";

/** A catalogue representation as sent: its JSON text and strong ETag. */
export interface Encoded {
  body: string;
  etag: string;
}

/** The catalogue's representations: the list and each book. */
interface EncodedCatalogue {
  list: Encoded;
  /** One book's, or undefined for an id no book has. */
  get(id: number): Encoded | undefined;
}

const encodedCatalogues = new WeakMap<BookStore, EncodedCatalogue>();

/**
 * The representations of a catalogue with their ETags, hashed once per store (a catalogue does
 * not change while it is served).
 */
export function encodedCatalogue(books: BookStore): EncodedCatalogue {
  const known = encodedCatalogues.get(books);
  if (known !== undefined) return known;
  const encoder = new TextEncoder();
  const encode = (body: string): Encoded => ({ body, etag: contentEtag(encoder.encode(body)) });
  const byId = new Map<number, Encoded>();
  for (const book of books.list()) byId.set(book.id, encode(books.getJson(book.id)!));
  const encoded: EncodedCatalogue = { list: encode(books.listJson()), get: (id) => byId.get(id) };
  encodedCatalogues.set(books, encoded);
  return encoded;
}

/**
 * The answer to a GET of a catalogue representation (the list or one book): the bytes and ETag
 * the store encoded once, the negotiated `type`, and a 304 when `If-None-Match` matches.
 */
function catalogueAnswer(
  encoded: Encoded,
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
  const catalogue = encodedCatalogue(books);
  app.openapi(listBooks, (c) => {
    return preEncoded(catalogueAnswer(catalogue.list, {
      type: negotiateJson(c.req.header("accept")),
      requestId: c.get("requestId"),
      ifNoneMatch: c.req.header("if-none-match"),
    }));
  });

  app.openapi(getBook, (c) => {
    const { id } = c.req.valid("param");
    const type = negotiateJson(c.req.header("accept"));
    const encoded = catalogue.get(id);
    if (encoded === undefined) throw new AppError("book-not-found", `No book has id ${id}.`);
    return preEncoded(catalogueAnswer(encoded, {
      type,
      requestId: c.get("requestId"),
      ifNoneMatch: c.req.header("if-none-match"),
    }));
  });
}
