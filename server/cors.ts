import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import type { AppEnv } from "../lib/http/hono_env.ts";
import type { Handler } from "./handler.ts";

/** Request headers a browser may send cross-origin (docs/security.md, "Browsers"). */
export const CORS_ALLOW_HEADERS = [
  "authorization",
  "content-type",
  "if-match",
  "if-none-match",
  "idempotency-key",
  "x-request-id",
  "connect-protocol-version",
  "connect-timeout-ms",
  "x-grpc-web",
  "x-user-agent",
];

/** Response headers a cross-origin script may read. */
export const CORS_EXPOSE_HEADERS = [
  "etag",
  "location",
  "x-request-id",
  "retry-after",
  "ratelimit",
  "ratelimit-policy",
  "idempotent-replayed",
  "grpc-status",
  "grpc-message",
  // A trailers-only error's details (google.rpc.ErrorInfo), read by gRPC-Web clients.
  "grpc-status-details-bin",
];

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];

/**
 * CORS for `origins` (`*` or a list) with Hono's middleware. A request from any other origin
 * gets no CORS header at all (Hono's would still send Expose-Headers and, on a preflight,
 * Allow-Methods), so the middleware only runs for allowed origins. It runs before the gate's
 * middleware, so refusals (401, 403, 429) carry the headers too and a browser can read them.
 */
export function corsMiddleware(origins: "*" | string[]): MiddlewareHandler<AppEnv> {
  const allowed = origins === "*" ? undefined : new Set(origins);
  const handler = cors({
    origin: origins === "*" ? "*" : (origin) => (allowed!.has(origin) ? origin : null),
    allowMethods: METHODS,
    allowHeaders: CORS_ALLOW_HEADERS,
    exposeHeaders: CORS_EXPOSE_HEADERS,
    maxAge: 600,
  });
  return (c, next) => {
    const origin = c.req.header("origin");
    if (origin === undefined || (allowed !== undefined && !allowed.has(origin))) return next();
    return handler(c, next);
  };
}

/**
 * Adds `Vary: Origin` to every answer (docs/security.md, "Browsers"): with CORS on, what a response
 * carries depends on the request's Origin, and a cache must not give one origin's answer (or a
 * same-origin one, which has no CORS headers) to another.
 */
export function withVaryOrigin(handler: Handler): Handler {
  return (request, info) => {
    const response = handler(request, info);
    return response instanceof Promise ? response.then(varyOrigin) : varyOrigin(response);
  };
}

function varyOrigin(response: Response): Response {
  const vary = response.headers.get("vary");
  if (vary === null) response.headers.set("vary", "Origin");
  else if (!/(^|,)\s*(origin|\*)\s*(,|$)/i.test(vary)) {
    response.headers.set("vary", `${vary}, Origin`);
  }
  return response;
}
