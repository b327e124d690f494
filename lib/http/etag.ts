import { createHash } from "node:crypto";
import { Buffer } from "node:buffer";

/**
 * Entity tags (RFC 9110 8.8.3, 13.1): every ETag the server sends is made here and every
 * precondition compares against one here. `If-Match` compares strongly (13.1.1: a weak tag never
 * matches, `*` matches any current representation), `If-None-Match` weakly (13.1.2: `W/` is
 * ignored, `*` matches any current representation).
 */

/** Random bytes of a version's ETag: 128 bits, so no two versions of anything share one. */
const VERSION_TAG_BYTES = 16;

/**
 * A new strong ETag for a version about to be stored: 128 random bits, base64url, quoted. It is
 * made at each write and stored with the version (docs/storage.md says why it is not derived
 * from the KV versionstamp): unique to the address and its version, and telling nothing of when
 * it was written or what else was.
 */
export function newVersionEtag(): string {
  const bytes = new Uint8Array(VERSION_TAG_BYTES);
  crypto.getRandomValues(bytes);
  return `"${Buffer.from(bytes.buffer).toString("base64url")}"`;
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
 * True when `If-None-Match` matches `etag` (RFC 9110 13.1.2: weak comparison, so `W/` is
 * ignored; `*` matches any current representation). `etag` undefined: a current representation
 * without an ETag (a collection), which only `*` matches.
 */
export function ifNoneMatchHits(
  header: string | null | undefined,
  etag: string | undefined,
): boolean {
  if (header === null || header === undefined) return false;
  if (header === etag) return true;
  for (const part of header.split(",")) {
    const tag = part.trim();
    if (tag === "*") return true;
    if (etag !== undefined && (tag === etag || (tag.startsWith("W/") && tag.slice(2) === etag))) {
      return true;
    }
  }
  return false;
}

/** The header whose condition failed: its 412 names it. */
export type FailedCondition = "If-Match" | "If-None-Match";

/**
 * The preconditions of a write, evaluated as RFC 9110 13.2.2 orders them, on the target's state
 * as the store reads it in the operation that writes: `current` is the ETag of the caller's
 * current representation, undefined when there is none. Answers the header that failed (412), or
 * undefined when the write may go ahead.
 */
export type Precondition = (current: string | undefined) => FailedCondition | undefined;

/**
 * The precondition of a write's `If-Match` and `If-None-Match` (GraphQL's `ifMatch` and gRPC's
 * `etag` are `If-Match`); undefined when it has neither. RFC 9110 13.2.2: `If-Match` first (no
 * current representation, or no tag that matches strongly: false); then `If-None-Match` (a
 * current representation that `*` or a listed tag matches weakly: false; none: true).
 */
export function writePrecondition(
  ifMatch: string | undefined,
  ifNoneMatch?: string | undefined,
): Precondition | undefined {
  if (ifMatch === undefined && ifNoneMatch === undefined) return undefined;
  return (current) => {
    if (ifMatch !== undefined && (current === undefined || !ifMatchHits(ifMatch, current))) {
      return "If-Match";
    }
    if (
      ifNoneMatch !== undefined && current !== undefined && ifNoneMatchHits(ifNoneMatch, current)
    ) {
      return "If-None-Match";
    }
    return undefined;
  };
}

/** The precondition of GraphQL's `ifMatch` and gRPC's `etag`: `If-Match` alone. */
export function ifMatchPrecondition(ifMatch: string | undefined): Precondition | undefined {
  return writePrecondition(ifMatch, undefined);
}

/**
 * The preconditions of a write to a collection (`POST /addresses`, `DELETE /addresses`): it
 * always has a current representation and no ETag, so `If-Match` holds only with `*` and
 * `If-None-Match` fails with `*`. Answers the header that failed, or undefined.
 */
export function collectionCondition(
  ifMatch: string | undefined,
  ifNoneMatch: string | undefined,
): FailedCondition | undefined {
  if (ifMatch !== undefined && !ifMatchHits(ifMatch, undefined)) return "If-Match";
  if (ifNoneMatch !== undefined && ifNoneMatchHits(ifNoneMatch, undefined)) return "If-None-Match";
  return undefined;
}
