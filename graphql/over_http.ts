import { AppError } from "../lib/errors.ts";
import { acceptance, preferredMediaType } from "../lib/http/accept.ts";
import { readBodyLimited } from "../lib/http/body.ts";
import { parseMediaType } from "../lib/http/media_type.ts";

/** The response media types of GraphQL-over-HTTP. */
export type GraphqlMediaType = "application/json" | "application/graphql-response+json";

export const GRAPHQL_RESPONSE_JSON = "application/graphql-response+json";

// Named alike, `application/graphql-response+json` wins (what graphql-http's client sends and
// its server answers); through a wildcard, or without `Accept`, `application/json` (the legacy
// clients of GraphQL-over-HTTP).
const GRAPHQL_OFFERS: readonly GraphqlMediaType[] = [GRAPHQL_RESPONSE_JSON, "application/json"];

/**
 * Picks the response type from `Accept` (GraphQL-over-HTTP, lib/http/accept.ts): the one the
 * client accepts most; undefined when neither is acceptable.
 */
export function negotiateGraphqlType(accept: string | undefined): GraphqlMediaType | undefined {
  return preferredMediaType(accept, GRAPHQL_OFFERS, "application/json");
}

/**
 * True when `Accept` asks for `text/html` (what browsers send for a page) by name or as `text/*`,
 * not only through `*\/*` (what API clients send).
 */
export function acceptsHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const html = acceptance(accept, "text/html");
  return html.q > 0 && html.specificity > 0;
}

/**
 * True for a JSON Content-Type, in UTF-8 when a charset is given: `application/json` whose only
 * parameter, if any, is `charset=utf-8`.
 */
export function isJsonRequest(contentType: string | undefined | null): boolean {
  const media = parseMediaType(contentType);
  return media?.type === "application/json" &&
    media.parameters?.every(([name, value]) =>
        name === "charset" && value.toLowerCase() === "utf-8"
      ) === true;
}

/** Checks the request's Content-Type: JSON, in UTF-8 when a charset is given (415 otherwise). */
export function assertJsonRequest(contentType: string | undefined): void {
  if (isJsonRequest(contentType)) return;
  throw new AppError(
    "unsupported-media-type",
    contentType
      ? `Content-Type ${
        contentType.slice(0, 100)
      } is not supported; send application/json (UTF-8) with {"query": "…"}.`
      : 'The request has no Content-Type; send application/json with {"query": "…"}.',
  );
}

/** The GraphQL-over-HTTP request parameters. */
interface GraphqlParams {
  query: string;
  variables: Record<string, unknown> | undefined;
  operationName: string | undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function describe(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
}

/** Parses and checks the JSON body: 400 `invalid-body` or `invalid-parameter` with the reason. */
export function readParams(text: string): GraphqlParams {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new AppError(
      "invalid-body",
      text.length === 0
        ? "The request body is empty."
        : `The request body is not valid JSON: ${
          error instanceof Error ? error.message.slice(0, 200) : "parse error"
        }`,
    );
  }
  if (!isObject(body)) {
    throw new AppError(
      "invalid-body",
      `The request body must be a JSON object, not ${describe(body)}.`,
    );
  }
  const { query, variables, operationName, extensions } = body;
  if (typeof query !== "string") {
    throw new AppError(
      "invalid-parameter",
      query === undefined
        ? 'The request has no "query" parameter (a string holding the GraphQL document).'
        : `The "query" parameter must be a string, not ${describe(query)}.`,
    );
  }
  if (variables != null && !isObject(variables)) {
    throw new AppError(
      "invalid-parameter",
      `The "variables" parameter must be an object or null, not ${describe(variables)}.`,
    );
  }
  if (operationName != null && typeof operationName !== "string") {
    throw new AppError(
      "invalid-parameter",
      `The "operationName" parameter must be a string or null, not ${describe(operationName)}.`,
    );
  }
  if (extensions != null && !isObject(extensions)) {
    throw new AppError(
      "invalid-parameter",
      `The "extensions" parameter must be an object or null, not ${describe(extensions)}.`,
    );
  }
  return {
    query,
    variables: variables ?? undefined,
    operationName: operationName ?? undefined,
  };
}

/** UTF-8 length of a string, computed only when the cheap bound does not already settle it. */
export function exceedsUtf8Bytes(text: string, max: number): boolean {
  if (text.length * 3 <= max) return false;
  if (text.length > max) return true;
  return new TextEncoder().encode(text).byteLength > max;
}

/** Largest accepted body: the document, its JSON escaping, and variables. */
export function graphqlBodyLimit(config: { maxDocumentBytes: number }): number {
  return 2 * config.maxDocumentBytes;
}

/** The body's text as `readBodyText` decodes it. */
function decodeBody(bytes: Uint8Array): string {
  return utf8.decode(bytes);
}

/**
 * Reads a request body as UTF-8 text, failing with 413 above `limit` bytes. Bytes that are not
 * UTF-8 become U+FFFD (the WHATWG decoder's behaviour) and then fail as JSON or GraphQL syntax
 * where they matter; a strict decoder would cost every request a second pass.
 */
export function readBodyText(request: Request, limit: number): Promise<string> {
  // With Content-Length, which the HTTP server holds the body to, the runtime decodes the whole
  // body at once (the same decoding: UTF-8, U+FFFD for bad bytes, a BOM dropped).
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) <= limit) return request.text();
  return readBodyLimited(request, limit).then(decodeBody);
}

const utf8 = new TextDecoder();
