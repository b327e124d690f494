import { createHash } from "node:crypto";

/**
 * Entity tags (RFC 9110 8.8.3, 13.1): every ETag the server sends is made here and every
 * precondition compares against one here. `If-Match` compares strongly (13.1.1: a weak tag never
 * matches, `*` matches any current representation), `If-None-Match` weakly (13.1.2: `W/` is
 * ignored).
 */

/** The strong ETag of a stored version: its KV versionstamp, quoted. */
export function versionEtag(versionstamp: string): string {
  return `"${versionstamp}"`;
}

/** A strong ETag of some bytes: the start of their SHA-256, base64url. */
export function contentEtag(bytes: Uint8Array): string {
  return `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 27)}"`;
}

/**
 * True when `If-Match` lets a write of the representation whose ETag is `etag` go ahead: the
 * list holds `*` or `etag` itself (strong comparison). `etag` undefined: the representation has
 * none (a collection), so only `*` matches.
 */
export function ifMatchHits(header: string, etag: string | undefined): boolean {
  for (const part of header.split(",")) {
    const tag = part.trim();
    if (tag === "*" || (etag !== undefined && tag === etag)) return true;
  }
  return false;
}

/**
 * The precondition of a write with `If-Match` (or GraphQL's `ifMatch`, gRPC's `etag`; strong
 * comparison) on the stored version's versionstamp, in the store's form; none without one.
 */
export function ifMatchPrecondition(
  ifMatch: string | undefined,
): ((versionstamp: string) => boolean) | undefined {
  if (ifMatch === undefined) return undefined;
  return (versionstamp) => ifMatchHits(ifMatch, versionEtag(versionstamp));
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
