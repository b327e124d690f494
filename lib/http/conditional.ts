import { ifNoneMatchHits } from "./etag.ts";
import { jsonHeaders } from "./negotiate.ts";
import { completeAnswer } from "./response_headers.ts";

/**
 * Cache-Control of the catalogue: it does not change while a process runs (it is seeded once
 * and has no write API), so a client may reuse it for five minutes and then revalidate with its
 * ETag. No `public`: when books need a token, shared caches must not keep them.
 */
export const BOOKS_CACHE_CONTROL = "max-age=300";

/** Cache-Control of addresses: personal data, revalidated on every use. */
export const ADDRESS_CACHE_CONTROL = "private, no-cache";

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
    return completeAnswer(new Response(null, { status: 304, headers }));
  }
  return completeAnswer(new Response(body, { headers }));
}
