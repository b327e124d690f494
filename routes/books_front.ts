import type { Logger } from "../lib/log.ts";
import { logHttpAccess } from "../lib/access_log.ts";
import { requestIdFrom } from "../lib/http/request_id.ts";
import { ID_PATTERN } from "../lib/schemas.ts";
import type { BookStore } from "../store/books.ts";
import type { Inner } from "../server/handler.ts";
import { acceptableJson } from "../lib/http/negotiate.ts";
import { BOOK_PATH_PREFIX, BOOK_ROUTE, BOOKS_PATH } from "../lib/paths.ts";
import { catalogueAnswer, type Encoded, encodedCatalogue } from "./books.ts";

/**
 * Answers the successful catalogue reads, `GET /rest/books` and `GET /api/book/{id}` of a book
 * that exists, before the framework sees them, and hands every other request to `app`.
 *
 * Why: these reads are most of the traffic and their bodies are bytes encoded once, so the
 * router, middleware chain and parameter validation would be most of their cost. The answer is
 * the route's own (`catalogueAnswer`, the same negotiation, the same access-log line); anything
 * that is not a plain success (HEAD, an unknown id, an unacceptable `Accept`, an id spelled in a
 * way the route's schema refuses) goes to `app`, so errors are still rendered in one place.
 */
export function withHotReads(deps: { books: BookStore; logger: Logger }, app: Inner): Inner {
  const { logger } = deps;
  const catalogue = encodedCatalogue(deps.books);
  return (request, admission) => {
    if (request.method !== "GET") return app(request, admission);
    const started = performance.now();
    const path = admission.path;
    let encoded: Encoded | undefined;
    let route: string | undefined;
    if (path === BOOKS_PATH) {
      encoded = catalogue.list;
      route = BOOKS_PATH;
    } else if (path.startsWith(BOOK_PATH_PREFIX)) {
      const id = path.slice(BOOK_PATH_PREFIX.length);
      if (ID_PATTERN.test(id)) encoded = catalogue.get(Number(id));
      route = BOOK_ROUTE;
    }
    if (encoded === undefined) return app(request, admission);
    const type = acceptableJson(request.headers.get("accept"));
    if (type === undefined) return app(request, admission);
    const requestId = requestIdFrom(request.headers.get("x-request-id"));
    const response = catalogueAnswer(encoded, {
      type,
      requestId,
      ifNoneMatch: request.headers.get("if-none-match"),
    });
    logHttpAccess(logger, {
      method: "GET",
      path,
      route,
      status: response.status,
      started,
      requestId,
    });
    return response;
  };
}
