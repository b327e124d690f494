import { createHash } from "node:crypto";
import { jsonHeaders } from "./negotiate.ts";

/**
 * Cache-Control of the catalogue: it does not change while a process runs (it is seeded once
 * and has no write API), so a client may reuse it for five minutes and then revalidate with its
 * ETag. No `public`: when books need a token, shared caches must not keep them.
 */
export const BOOKS_CACHE_CONTROL = "max-age=300";

/** Cache-Control of addresses: personal data, revalidated on every use. */
export const ADDRESS_CACHE_CONTROL = "private, no-cache";

/** A strong ETag of some bytes: the start of their SHA-256, base64url. */
export function contentEtag(bytes: Uint8Array): string {
  return `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 27)}"`;
}

/**
 * True when `If-None-Match` matches `etag` (RFC 9110 13.1.2: weak comparison, so `W/` is
 * ignored; `*` matches any current representation).
 */
export function ifNoneMatchHits(header: string | null | undefined, etag: string): boolean {
  if (header === null || header === undefined) return false;
  if (header === etag) return true;
  for (const part of header.split(",")) {
    const tag = part.trim();
    if (tag === "*" || tag === etag || (tag.startsWith("W/") && tag.slice(2) === etag)) {
      return true;
    }
  }
  return false;
}

/**
 * The answer to a GET of a JSON representation with a strong ETag: 304 without a body when
 * `If-None-Match` matches, else 200. Both carry the ETag, Cache-Control, `Vary: Accept`, the
 * request id and `nosniff` (RFC 9110 15.4.5: a 304 repeats the validator and caching headers).
 */
export function conditionalJson(
  body: BodyInit,
  answer: {
    type: string;
    etag: string;
    cacheControl: string;
    requestId: string;
    ifNoneMatch: string | null | undefined;
  },
): Response {
  const headers: Record<string, string> = {
    ...jsonHeaders(answer.type, answer.requestId),
    "etag": answer.etag,
    "cache-control": answer.cacheControl,
  };
  if (ifNoneMatchHits(answer.ifNoneMatch, answer.etag)) {
    // No body, so no Content-Type; every other header as on the 200.
    delete headers["content-type"];
    return new Response(null, { status: 304, headers });
  }
  return new Response(body, { headers });
}
