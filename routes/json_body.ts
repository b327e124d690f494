import type { RouteConfig } from "@hono/zod-openapi";
import { AppError } from "../lib/errors.ts";
import {
  bodyTypesFor,
  isBodyTypeFor,
  MERGE_PATCH_JSON,
  readBodyLimited,
} from "../lib/http/body.ts";

// Whole bodies only (no `stream`), so one decoder serves every request.
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The body guard of JSON writes (POST, PUT, PATCH), run by every operation that declares a body
 * (server/operations.ts) before its parameters are checked: 415 without a body type the method
 * takes (lib/http/body.ts `bodyTypesFor`; on PATCH with `Accept-Patch`), 413 above `limit` bytes,
 * 400 `invalid-body` for anything that is not a JSON object. It is the one judge of the body's
 * type (parameters of the header are not judged: `application/json;;;` is JSON), and reads,
 * decodes and parses the body once; the operation validates the parsed value against its schema.
 */
export async function jsonObjectBody(
  request: Request,
  method: string,
  limit: number,
): Promise<unknown> {
  const types = bodyTypesFor(method) ?? [];
  const type = request.headers.get("content-type");
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
  const bytes = await readBodyLimited(request, limit);
  let value: unknown;
  try {
    value = JSON.parse(UTF8.decode(bytes));
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
  return value;
}

/**
 * A schema named by reference in a route's `content`: the document names the vendor types' body
 * schema by `$ref` to the one `application/json` declares (its component), so it is described
 * once. The cast keeps zod-openapi's input types, which need every entry to be zod; at run time
 * the reference is documentation only (the operation validates with the one zod schema).
 */
export function byReference<T>(name: string, _schema: T): T {
  return { $ref: `#/components/schemas/${name}` } as unknown as T;
}

/**
 * Documents `route` whole and returns it with only its body validated before the handler
 * (register the result with `app.openapi`); the handler checks the left-out parameters itself,
 * with the route's own schema, after the body.
 *
 * Why: an operation checks its query, path parameters and headers before its body, as the
 * gRPC methods read their messages (the id and etag before the address). A create's message
 * is the address first and its request id after it, so POST /addresses checks its body before
 * its headers, and the same bad request gets the same error in every style
 * (tests/fuzz/fuzz_address_rpc_test.ts).
 */
export function bodyValidatedOnly<R extends RouteConfig & { request: { body: unknown } }>(
  registry: { registerPath(route: RouteConfig): void },
  route: R,
): R & { hide: true } {
  const { middleware: _marker, ...documented } = route;
  registry.registerPath(documented as RouteConfig);
  return { ...route, hide: true, request: { body: route.request.body } } as R & { hide: true };
}
