import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { VENDOR_JSON, VENDOR_JSON_V2 } from "./negotiate.ts";
import { ErrorBodySchema, PROBLEM_JSON, ProblemSchema } from "../schemas.ts";

/** OpenAPI fragments shared by the REST routes: response media types and HTTP semantics headers. */

/** A JSON response body in each media type the server answers with (docs/http.md, Versions). */
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
  "if-none-match": z.string().optional().meta({
    param: { name: "if-none-match", in: "header" },
    description: "ETags (or `*`) the client holds; a match answers 304 without a body.",
  }),
});

/** `If-Match` on a write. */
export const IfMatchSchema = z.string().max(1000).optional().meta({
  param: { name: "if-match", in: "header" },
  description: "Only act if the address still has one of these ETags, or exists for `*` " +
    "(else 412 `precondition-failed`).",
});

/** `If-None-Match` on a write of one address (RFC 9110 13.1.2, evaluated after If-Match). */
export const IfNoneMatchWriteSchema = z.string().max(1000).optional().meta({
  param: { name: "if-none-match", in: "header" },
  description: "Only act if the caller's address at this id has none of these ETags (weak " +
    "comparison: `W/` is ignored), or, with `*`, if the caller has no address at this id: " +
    "`If-None-Match: *` on a version 2 PUT creates only if absent. Else 412 " +
    "`precondition-failed` and nothing changes. Evaluated after `If-Match` (RFC 9110 13.2.2), " +
    "in the atomic operation that writes.",
});

/** `If-Match` and `If-None-Match` on a write to the collection `/addresses`. */
export const CollectionConditionSchemas = {
  "if-match": z.string().max(1000).optional().meta({
    param: { name: "if-match", in: "header" },
    description: "The collection has no ETag: only `*` holds (it always exists); any other " +
      "value is 412 `precondition-failed`.",
  }),
  "if-none-match": z.string().max(1000).optional().meta({
    param: { name: "if-none-match", in: "header" },
    description: "The collection always exists and has no ETag: `*` is 412 " +
      "`precondition-failed` (RFC 9110 13.1.2); a list of ETags never matches, so the request " +
      "goes ahead.",
  }),
};

const RETRY_AFTER = {
  description: "Seconds to wait before retrying.",
  schema: { type: "integer" as const },
};

const ERROR_CONTENT = {
  "application/json": { schema: { $ref: "#/components/schemas/Errors" } },
  [PROBLEM_JSON]: { schema: { $ref: "#/components/schemas/Problem" } },
};

/** Answers any guarded operation may give, documented once under `components.responses`. */
const SHARED_RESPONSES = {
  Unauthorized: {
    description: "`unauthorized`: a token is needed and none was sent, or the token sent is not " +
      "valid (when authentication is configured).",
    headers: {
      "WWW-Authenticate": {
        description: 'The challenge: `Bearer realm="books"`, with `error="invalid_token"` when ' +
          "a token was sent.",
        required: true,
        schema: { type: "string" as const },
      },
    },
    content: ERROR_CONTENT,
  },
  Forbidden: {
    description: "`forbidden`: the token lacks the scope this operation needs.",
    headers: {
      "WWW-Authenticate": {
        description: 'Names the scope: `Bearer error="insufficient_scope", scope="…"`.',
        required: true,
        schema: { type: "string" as const },
      },
    },
    content: ERROR_CONTENT,
  },
  RateLimited: {
    description: "`rate-limited`: over the rate limit (`RATE_LIMIT`).",
    headers: {
      "Retry-After": { ...RETRY_AFTER, required: true },
      RateLimit: {
        description: "The quota left (IETF httpapi draft).",
        schema: { type: "string" as const },
      },
      "RateLimit-Policy": {
        description: "The quota (IETF httpapi draft).",
        schema: { type: "string" as const },
      },
    },
    content: ERROR_CONTENT,
  },
  ServiceUnavailable: {
    description: "`service-unavailable`: storage busy past the retry budget or unreachable, " +
      "token keys unavailable, the server shutting down, or (under `deno serve`) start-up " +
      "failed; `storage-unavailable`: storage cannot be written (disk full, read-only, the KV " +
      "file gone or replaced).",
    headers: { "Retry-After": RETRY_AFTER },
    content: ERROR_CONTENT,
  },
};

/** Registers the error schemas and the shared answers that the references below name. */
export function registerSharedResponses(registry: OpenAPIHono["openAPIRegistry"]): void {
  // Copies: `register` calls `.openapi`, which zod gives only to schemas made after
  // @hono/zod-openapi extends it, and these are made in lib/, which loads without it.
  registry.register("Errors", ErrorBodySchema.clone());
  registry.register("Problem", ProblemSchema.clone());
  for (const [name, response] of Object.entries(SHARED_RESPONSES)) {
    registry.registerComponent("responses", name, response);
  }
}

const shared = (name: keyof typeof SHARED_RESPONSES) => ({
  $ref: `#/components/responses/${name}`,
});

/** 503: storage busy, unreachable or failing, keys unavailable, shutting down, or start-up failed. */
export const UNAVAILABLE = shared("ServiceUnavailable");

/** What the gate may answer for any operation it guards (every one but the probes). */
export const GATE_RESPONSES = {
  401: shared("Unauthorized"),
  429: shared("RateLimited"),
  503: UNAVAILABLE,
};

/** The gate's answers for an operation that needs a scope when authentication is on. */
export const SCOPED_RESPONSES = { ...GATE_RESPONSES, 403: shared("Forbidden") };
