import { AppError } from "../errors.ts";
import { acceptance, preferredMediaType } from "./accept.ts";
import { mediaTypeOf } from "./media_type.ts";
import { completeAnswer } from "./response_headers.ts";

/** The vendor media type of version 1 of this API (docs/http.md, Versions). */
export const VENDOR_JSON = "application/vnd.books.v1+json";

/** Version 2: RFC 9110 PUT on addresses; every representation as in version 1. */
export const VENDOR_JSON_V2 = "application/vnd.books.v2+json";

/**
 * Picks the response type for a JSON resource from `Accept`: `application/json` unless the
 * client asks for a vendor type, which is then echoed (docs/http.md, Versions). 406 when none is
 * acceptable. `prefer` is the type a wildcard (or no `Accept`) gets instead of `application/json`.
 */
export function negotiateJson(
  accept: string | undefined | null,
  prefer?: typeof VENDOR_JSON_V2,
): string {
  const type = acceptableJson(accept, prefer);
  if (type !== undefined) return type;
  throw new AppError(
    "not-acceptable",
    `This resource is available as application/json, ${VENDOR_JSON} or ${VENDOR_JSON_V2}; ` +
      `Accept was ${accept?.slice(0, 100)}.`,
  );
}

// What a JSON resource offers, in its order of preference when the client names several alike:
// a vendor type the client names is echoed.
const JSON_OFFERS = [VENDOR_JSON, VENDOR_JSON_V2, "application/json"];

/** The type `negotiateJson` picks, or undefined when `Accept` allows none. */
export function acceptableJson(
  accept: string | undefined | null,
  prefer?: typeof VENDOR_JSON_V2,
): string | undefined {
  if (!accept) return prefer ?? "application/json";
  const type = preferredMediaType(accept, JSON_OFFERS, "application/json") ?? problemReader(accept);
  if (prefer === undefined || type === undefined || type === prefer) return type;
  // A v2 request is answered in v2 unless Accept weighs v2 below the type it would get otherwise
  // (docs/http.md, Versions).
  const preferred = acceptance(accept, prefer).q;
  return preferred > 0 && preferred >= acceptance(accept, type).q ? prefer : type;
}

/**
 * A client that accepts problem documents and says nothing of plain JSON reads plain JSON (a
 * problem document is JSON): it gets `application/json`, not a 406.
 */
function problemReader(accept: string): string | undefined {
  return acceptance(accept, "application/problem+json").q > 0 &&
      acceptance(accept, "application/json").specificity === -1
    ? "application/json"
    : undefined;
}

/**
 * True when a request is version 2: its `Accept` names the v2 type and prefers it, or (a write)
 * its body's `Content-Type` names it. Everything else is version 1.
 */
export function isVersion2(
  accept: string | undefined | null,
  contentType: string | undefined | null,
): boolean {
  if (mediaTypeOf(contentType) === VENDOR_JSON_V2) return true;
  return acceptableJson(accept) === VENDOR_JSON_V2 &&
    acceptance(accept, VENDOR_JSON_V2).specificity === 2;
}

/**
 * The response type of an address request: version 2 answers carry the v2 type (unless `Accept`
 * rules it out and allows plain JSON), version 1 answers are negotiated
 * as for any JSON resource (`negotiateJson`).
 */
export function addressResponseType(
  accept: string | undefined | null,
  contentType: string | undefined | null,
): string {
  return negotiateJson(accept, isVersion2(accept, contentType) ? VENDOR_JSON_V2 : undefined);
}

/**
 * Headers of a negotiated JSON answer: its type, `Vary: Accept` (the type depends on `Accept`, so
 * caches must key on it: docs/http.md, Versions), the request id and `nosniff` (on every response).
 */
export function jsonHeaders(type: string, requestId: string): Record<string, string> {
  return {
    "content-type": type,
    "vary": "Accept",
    "x-request-id": requestId,
    "x-content-type-options": "nosniff",
  };
}

/**
 * A negotiated JSON answer: `jsonHeaders` and then `headers`, marked complete for the entry
 * (lib/http/response_headers.ts `completeAnswer`).
 */
export function jsonAnswer(
  body: BodyInit | null,
  answer: { status?: number; type: string; requestId: string; headers?: Record<string, string> },
): Response {
  return completeAnswer(
    new Response(body, {
      status: answer.status ?? 200,
      headers: { ...jsonHeaders(answer.type, answer.requestId), ...answer.headers },
    }),
  );
}
