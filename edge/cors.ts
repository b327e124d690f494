import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import type { AppEnv } from "../lib/app_env.ts";

/** Request headers a browser may send cross-origin (design.md, "Browsers"). */
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
  "grpc-status",
  "grpc-message",
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
