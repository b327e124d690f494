import type { GraphqlConfig } from "../lib/config.ts";
import type { Logger } from "../lib/log.ts";
import { logHttpAccess } from "../lib/access_log.ts";
import { requestIdFrom } from "../lib/http/request_id.ts";
import type { Inner } from "../server/handler.ts";
import type { Admission } from "../security/admission.ts";
import { ANONYMOUS } from "../security/caller.ts";
import { type AccessRules, accessRules, authorize } from "../security/gate.ts";
import type { BookStore } from "../store/books.ts";
import {
  decodeBody,
  graphqlBodyLimit,
  isJsonRequest,
  negotiateGraphqlType,
  readParams,
} from "./over_http.ts";
import { dataResponse } from "./responses.ts";
import type { ResultCache } from "./result_cache.ts";
import { GRAPHQL_PATH } from "../lib/paths.ts";

/**
 * Answers `POST /graphql` from the result cache (graphql/result_cache.ts) before the framework
 * sees the request, and hands every other request to `app`.
 *
 * Why: a cached result is bytes ready to send, so the router and middleware would be most of the
 * cost of such a request. The answer is the route's own: the same checks in the same order
 * (Accept, Content-Type, body size, parameters), the same cache lookup, body, headers, request
 * id and access-log line. The route's document-size check needs no counterpart here: a document
 * over the limit is refused before its result could be cached, so it never is. A request this
 * path cannot answer from the cache goes to `app` with the same body bytes, so every error and
 * every executed query is still the route's. A body without Content-Length goes to `app` unread
 * (its size is checked while it streams there), and so does a request whose caller may not read
 * the books (`access`, the gate's rules): every cached result is of the catalogue alone
 * (graphql/result_cache.ts), so that is all a cached answer needs, and the route renders the
 * refusal.
 */
export function withCachedGraphql(
  deps: {
    books: BookStore;
    logger: Logger;
    results: ResultCache;
    config: GraphqlConfig;
    access?: AccessRules | undefined;
  },
  app: Inner,
): Inner {
  const { books, logger, results } = deps;
  const access = deps.access ?? accessRules(undefined);
  const bodyLimit = graphqlBodyLimit(deps.config);

  function cached(text: string): string | undefined {
    try {
      return results.lookup(readParams(text), books.list());
    } catch {
      return undefined; // the route explains what is wrong with it
    }
  }

  async function answer(request: Request, admission: Admission): Promise<Response> {
    const started = performance.now();
    const caller = admission.decision?.ok ? admission.decision.caller : ANONYMOUS;
    if (authorize(caller, "books:read", access) !== undefined) return app(request, admission);
    const type = negotiateGraphqlType(request.headers.get("accept") ?? undefined);
    const length = Number(request.headers.get("content-length") ?? NaN);
    if (
      type === undefined || !isJsonRequest(request.headers.get("content-type")) ||
      !(length >= 0 && length <= bodyLimit)
    ) {
      return app(request, admission);
    }
    const bytes = new Uint8Array(await request.arrayBuffer());
    const body = cached(decodeBody(bytes));
    if (body === undefined) {
      const again = new Request(request.url, {
        method: request.method,
        headers: request.headers,
        body: bytes,
      });
      return app(again, admission);
    }
    const requestId = requestIdFrom(request.headers.get("x-request-id"));
    const response = dataResponse(body, type, requestId);
    logHttpAccess(logger, {
      method: "POST",
      path: GRAPHQL_PATH,
      route: GRAPHQL_PATH,
      status: 200,
      started,
      requestId,
    });
    return response;
  }

  // Every other request passes through synchronously: no promise of this layer around the app's.
  return (request, admission) =>
    request.method === "POST" && admission.path === GRAPHQL_PATH
      ? answer(request, admission)
      : app(request, admission);
}
