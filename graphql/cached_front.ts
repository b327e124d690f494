import type { GraphqlConfig } from "../lib/config.ts";
import { type Logger, msSince } from "../lib/log.ts";
import { requestIdFrom } from "../lib/http/request_id.ts";
import type { Inner } from "../server/handler.ts";
import type { Admission } from "../security/admission.ts";
import { nameHttpSpan, TRACING } from "../lib/tracing.ts";
import type { BookStore } from "../store/books.ts";
import {
  decodeBody,
  exceedsUtf8Bytes,
  graphqlBodyLimit,
  isJsonRequest,
  negotiateGraphqlType,
  readParams,
} from "./over_http.ts";
import { dataResponse } from "./responses.ts";
import type { ResultCache } from "./result_cache.ts";

/**
 * Answers `POST /graphql` from the result cache (graphql/result_cache.ts) before the framework
 * sees the request, and hands every other request to `app`.
 *
 * Why: a cached result is bytes ready to send, so the router and middleware were most of the
 * cost of such a request (bench: 24 µs of CPU, against 18 µs for the same work done here). The
 * answer is the app's own: the same checks in the same order (Accept, Content-Type, body size,
 * parameters, document size), the same body, headers, request id and access-log line. A request
 * this path cannot answer from the cache goes to `app` with the same body bytes, so every error
 * and every executed query is still the app's. A body without Content-Length goes to `app`
 * unread (its size is checked while it streams there).
 */
export function withCachedGraphql(
  deps: { books: BookStore; logger: Logger; results: ResultCache; config: GraphqlConfig },
  app: Inner,
): Inner {
  const { books, logger, results } = deps;
  const bodyLimit = graphqlBodyLimit(deps.config);
  const maxDocumentBytes = deps.config.maxDocumentBytes;

  function cached(text: string): Uint8Array<ArrayBuffer> | undefined {
    let params;
    try {
      params = readParams(text);
    } catch {
      return undefined; // the app explains what is wrong with it
    }
    if (exceedsUtf8Bytes(params.query, maxDocumentBytes)) return undefined;
    const key = results.keyOf(params);
    return key === undefined ? undefined : results.get(key, books.list());
  }

  async function answer(request: Request, admission: Admission): Promise<Response> {
    const started = performance.now();
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
    logger.request({
      method: "POST",
      path: "/graphql",
      status: 200,
      durationMs: msSince(started),
      requestId,
      traceId: TRACING ? nameHttpSpan("POST", "/graphql", requestId) : undefined,
    });
    return response;
  }

  // Every other request passes through synchronously: no promise of this layer around the app's.
  return (request, admission) =>
    request.method === "POST" && admission.path === "/graphql"
      ? answer(request, admission)
      : app(request, admission);
}
