import type { Context, MiddlewareHandler } from "hono";
import { ANONYMOUS } from "../security/caller.ts";
import type { Logger } from "../lib/log.ts";
import { logHttpAccess } from "../lib/access_log.ts";
import { addMissingHeaders } from "../lib/http/response_headers.ts";
import { requestIdFrom } from "../lib/http/request_id.ts";
import type { AppEnv } from "../lib/http/hono_env.ts";
import { matchedRoutes } from "hono/route";
import { routeTemplate, TRACING } from "../lib/tracing.ts";

/**
 * Sets `X-Request-Id` on every response (the client's when well-formed, else a new UUID) and
 * writes one JSON access-log line per request. The query string is not logged: it may carry
 * things that do not belong in logs.
 */
export function requestContext(logger: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    const requestId = requestIdFrom(c.req.header("x-request-id"));
    c.set("requestId", requestId);
    // Until authentication decides otherwise, every caller is the anonymous owner.
    c.set("caller", ANONYMOUS);
    await next();
    addMissingHeaders(c.res.headers, {
      "x-request-id": requestId,
      "x-content-type-options": "nosniff",
    });
    logHttpAccess(logger, {
      method: c.req.method,
      path: c.req.path,
      route: TRACING ? routeOf(c) : undefined,
      status: c.res.status,
      started,
      requestId,
    });
  };
}

/**
 * The template of the route that answered (`/addresses/{id}`); a request no route took (only
 * middleware ran: 404, 405, a refusal) has none.
 */
function routeOf(c: Context<AppEnv>): string | undefined {
  const route = matchedRoutes(c).at(c.req.routeIndex);
  return route === undefined || route.method === "ALL" ? undefined : routeTemplate(route.path);
}
