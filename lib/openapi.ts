import { z } from "@hono/zod-openapi";
import { VENDOR_JSON, VENDOR_JSON_V2 } from "./negotiate.ts";

/** OpenAPI fragments shared by the REST routes: response media types and HTTP semantics headers. */

/** A JSON response body in each media type the server answers with (spec 9 versioning). */
export function jsonContent<T>(schema: T) {
  return {
    "application/json": { schema },
    [VENDOR_JSON]: { schema },
    [VENDOR_JSON_V2]: { schema },
  };
}

const stringHeader = (description: string) => ({
  description,
  schema: { type: "string" as const },
});

/** Headers of a representation that can be revalidated. */
export const CACHED_HEADERS = {
  ETag: stringHeader("Strong validator of this representation (If-None-Match, If-Match)."),
  "Cache-Control": stringHeader("`max-age=300` for books, `private, no-cache` for addresses."),
  Vary: stringHeader("`Accept`: the media type follows Accept."),
};

/** The 304 answer to a matching If-None-Match. */
export const NOT_MODIFIED = {
  description: "Not Modified: `If-None-Match` matched the current ETag; no body.",
  headers: CACHED_HEADERS,
};

/** `If-None-Match` on a conditional read. */
export const IfNoneMatchHeaderSchema = z.object({
  "if-none-match": z.string().optional().openapi({
    param: { name: "if-none-match", in: "header" },
    description: "ETags (or `*`) the client holds; a match answers 304 without a body.",
  }),
});

/** `If-Match` on a write. */
export const IfMatchSchema = z.string().max(1000).optional().openapi({
  param: { name: "if-match", in: "header" },
  description: "Only act if the address still has one of these ETags, or exists for `*` " +
    "(else 412 `precondition-failed`).",
});
