import { AppError } from "./errors.ts";

/** The vendor media type of this API's current version (spec 9, media type versioning). */
export const VENDOR_JSON = "application/vnd.books.v1+json";

/**
 * Picks the response type for a JSON resource from `Accept`: `application/json` unless the
 * client asks for the vendor type, which is then echoed (spec 9). 406 when neither is acceptable.
 */
export function negotiateJson(accept: string | undefined | null): string {
  const type = acceptableJson(accept);
  if (type !== undefined) return type;
  throw new AppError(
    "not-acceptable",
    `This resource is available as application/json or ${VENDOR_JSON}; Accept was ${
      accept?.slice(0, 100)
    }.`,
  );
}

/** The type `negotiateJson` picks, or undefined when `Accept` allows neither. */
export function acceptableJson(accept: string | undefined | null): string | undefined {
  if (!accept) return "application/json";
  let json = false;
  for (const part of accept.split(",")) {
    const [range = "", ...params] = part.split(";");
    const type = range.trim().toLowerCase();
    if (params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p))) continue;
    if (type === VENDOR_JSON) return VENDOR_JSON;
    if (
      type === "application/json" || type === "*/*" || type === "application/*" ||
      type === "application/problem+json"
    ) {
      json = true;
    }
  }
  return json ? "application/json" : undefined;
}

/**
 * Headers of a negotiated JSON answer: its type, `Vary: Accept` (the type depends on `Accept`, so
 * caches must key on it; spec 9), the request id and `nosniff` (on every response).
 */
export function jsonHeaders(type: string, requestId: string): Record<string, string> {
  return {
    "content-type": type,
    "vary": "Accept",
    "x-request-id": requestId,
    "x-content-type-options": "nosniff",
  };
}
