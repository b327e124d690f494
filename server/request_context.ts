import type { Context, MiddlewareHandler } from "hono";
import { ANONYMOUS } from "../security/caller.ts";
import { AppError } from "../lib/errors.ts";
import type { Logger } from "../lib/log.ts";
import { logHttpAccess } from "../lib/access_log.ts";
import { requestIdFrom } from "../lib/http/request_id.ts";
import type { AppEnv } from "../lib/http/hono_env.ts";
import {
  bodyTypesFor,
  isBodyTypeFor,
  mediaTypeOf,
  MERGE_PATCH_JSON,
  readBodyLimited,
} from "../lib/http/body.ts";
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
    // Hot handlers put the id into the headers they build: changing the headers of a finished
    // Response costs Deno.serve its fast path.
    if (!c.res.headers.has("x-request-id")) c.res.headers.set("x-request-id", requestId);
    if (!c.res.headers.has("x-content-type-options")) {
      c.res.headers.set("x-content-type-options", "nosniff");
    }
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

/**
 * Guards JSON writes (POST, PUT, PATCH): 415 without a body type the method takes
 * (lib/http/body.ts `bodyTypesFor`; on PATCH with `Accept-Patch`), 413 above `limit` bytes, 400
 * `invalid-body` for anything that is not a JSON object. The parsed text is handed to Hono's body
 * cache so the route's zod validator reads it without touching the stream again.
 */
export function jsonObjectBody(limit: number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const method = c.req.method;
    const types = bodyTypesFor(method);
    // A request no route takes is a 404 or 405 whatever its body.
    if (types === undefined || !matchedRoutes(c).some((r) => r.method !== "ALL")) return next();
    const type = c.req.header("content-type");
    if (!isBodyTypeFor(method, type)) {
      const wanted = types.join(" or ");
      throw new AppError(
        "unsupported-media-type",
        type
          ? `Content-Type ${type.slice(0, 100)} is not supported for ${method}; send ${wanted}.`
          : `The request has no Content-Type; send ${wanted}.`,
        method === "PATCH" ? { headers: { "accept-patch": MERGE_PATCH_JSON } } : {},
      );
    }
    const bytes = await readBodyLimited(c.req.raw, limit);
    let text: string;
    let value: unknown;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      value = JSON.parse(text);
    } catch (error) {
      const reason = bytes.length === 0
        ? "The request body is empty."
        : `The request body is not valid JSON: ${
          error instanceof Error ? error.message.slice(0, 200) : "parse error"
        }`;
      throw new AppError("invalid-body", reason);
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      const kind = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
      throw new AppError("invalid-body", `The request body must be a JSON object, not ${kind}.`);
    }
    // This guard is the one judge of the body's type. The route's own validators (zod-openapi's
    // media-type gate, Hono's JSON validator) apply a stricter grammar to the raw header and
    // refused types this guard accepts (`application/json;;;`, the vendor type) with an error the
    // edge rendered as 500. They see the bare media type this guard accepted instead; the
    // request's headers are immutable, and its body was read above (it is in the cache below).
    // A header that is the bare type already (nearly every client's) needs no new Request.
    const essence = mediaTypeOf(type)!;
    if (type !== essence) {
      const headers = new Headers(c.req.raw.headers);
      headers.set("content-type", essence);
      c.req.raw = new Request(c.req.raw.url, { method, headers });
    }
    // Hono's cache holds promises at run time though its type says otherwise; tests cover this.
    // The parsed value is cached too: each validator asking for JSON would otherwise parse the
    // text again through a new Response.
    const cache = c.req.bodyCache as Record<string, unknown>;
    cache.text = Promise.resolve(text);
    cache.json = Promise.resolve(value);
    await next();
  };
}
