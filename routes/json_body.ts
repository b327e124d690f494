import type { RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { AppError } from "../lib/errors.ts";
import type { AppEnv } from "../lib/http/hono_env.ts";
import {
  bodyTypesFor,
  isBodyTypeFor,
  MERGE_PATCH_JSON,
  readBodyLimited,
} from "../lib/http/body.ts";
import { mediaTypeOf } from "../lib/http/media_type.ts";

/**
 * How the address writes take their JSON bodies through zod-openapi, in one place. zod-openapi
 * validates what a route declares, but on the hot write path it did more than needed, and its
 * media-type grammar is stricter than the API's (lib/http/body.ts). Three workarounds, each
 * covered by the tests named with it:
 *
 * 1. `jsonObjectBody`: one guard reads, decodes and parses the body once, is the one judge of
 *    the body's type, and hands the parsed value to Hono's body cache, so the route's
 *    validators neither read the stream again nor refuse a type the guard accepted
 *    (`application/json;;;`, the vendor types: tests/routes/http_semantics_test.ts).
 * 2. `byReference`: zod-openapi adds one body validator per zod schema in `content`, whatever
 *    the request's type; the vendor types name the same schema by `$ref`, so a body is
 *    validated once (documentation is unchanged: tests/routes/openapi_test.ts).
 * 3. `bodyValidatedOnly`: a route whose header schema zod-openapi would validate on a copy of
 *    every request header is documented whole but registered with its body validator only; the
 *    handler checks its one header with the same schema (tests/store/idempotency_test.ts).
 */

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

/**
 * A schema named by reference in a route's `content` (workaround 2). The cast keeps
 * zod-openapi's input types, which need every entry to be zod; at run time the reference is
 * documentation only.
 */
export function byReference<T>(name: string, _schema: T): T {
  return { $ref: `#/components/schemas/${name}` } as unknown as T;
}

/**
 * Documents `route` whole and returns it with only its body validated (workaround 3): register
 * the result with `app.openapi`, and check the left-out headers in the handler with the route's
 * own schema.
 */
export function bodyValidatedOnly<R extends RouteConfig & { request: { body: unknown } }>(
  registry: { registerPath(route: RouteConfig): void },
  route: R,
): R & { hide: true } {
  const { middleware: _marker, ...documented } = route;
  registry.registerPath(documented as RouteConfig);
  return { ...route, hide: true, request: { body: route.request.body } } as R & { hide: true };
}
