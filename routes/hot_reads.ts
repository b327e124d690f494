import type { Logger } from "../lib/log.ts";
import { requestIdFrom } from "../lib/request_id.ts";
import type { BookStore } from "../store/books.ts";
import { acceptableJson, jsonHeaders } from "./negotiate.ts";

/** A Deno.serve handler. */
export type Handler = (
  request: Request,
  info: Deno.ServeHandlerInfo,
) => Response | Promise<Response>;

const BOOK_PATH = "/api/book/";
// The canonical ids the route's schema accepts; any other spelling goes to the app.
const BOOK_ID = /^[1-9][0-9]{0,15}$/;

/**
 * Answers the successful catalogue reads, `GET /rest/books` and `GET /api/book/{id}` of a book
 * that exists, before the framework sees them, and hands every other request to `app`.
 *
 * Why: these reads are most of the traffic and their bodies are bytes encoded once, so the
 * router, middleware chain and parameter validation were most of their cost (bench: 0.57× and
 * 0.38× of a bare Deno.serve). The answer is the app's own: same body, `Content-Type` from the
 * same negotiation, `Vary`, `X-Request-Id` and the same access-log line. Anything that is not a
 * plain success (HEAD, an unknown id, an unacceptable `Accept`, a malformed id) goes to `app`,
 * so errors are still rendered in one place.
 */
export function withHotReads(deps: { books: BookStore; logger: Logger }, app: Handler): Handler {
  const { books, logger } = deps;
  return (request, info) => {
    if (request.method !== "GET") return app(request, info);
    const started = performance.now();
    const path = pathOf(request.url);
    let body: Uint8Array<ArrayBuffer> | undefined;
    if (path === "/rest/books") body = books.listJson();
    else if (path.startsWith(BOOK_PATH)) {
      const id = path.slice(BOOK_PATH.length);
      if (BOOK_ID.test(id)) body = books.getJson(Number(id));
    }
    if (body === undefined) return app(request, info);
    const type = acceptableJson(request.headers.get("accept"));
    if (type === undefined) return app(request, info);
    const requestId = requestIdFrom(request.headers.get("x-request-id"));
    const response = new Response(body, {
      headers: jsonHeaders(type, requestId),
    });
    logger.request({
      method: "GET",
      path,
      status: 200,
      durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      requestId,
    });
    return response;
  };
}

/** The path of an absolute request URL, without query or fragment, as Hono matches it. */
export function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const query = url.indexOf("?", start);
  return query === -1 ? url.slice(start) : url.slice(start, query);
}
