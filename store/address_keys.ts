import { AppError } from "../lib/errors.ts";
import type { Address } from "../lib/schemas.ts";

/**
 * The address book's KV layout, in one place.
 *
 * - `["addresses", id]` → `AddressRecord`: the address with its owner. One read answers both
 *   "which address has this id" and "is this id held by anyone" (ids are global, owners are not).
 * - `["owner_addresses", owner, id]` → `Address`: the owner's index, a copy of the address so a
 *   page of a listing is one range read. Written and deleted in the same atomic operation as the
 *   record, so both carry the same versionstamp (the ETag).
 * - `["counters", "addresses"]` → `KvU64`: the last id POST handed out (or skipped as taken).
 * - `["counters", "addresses_next_taken"]` → `KvU64`: no address has an id between the counter
 *   and this one (0: none above the counter at all). Only v2 PUTs create addresses above the
 *   counter, and they lower it; POST looks for taken ids only when its batch would reach it.
 * - `["idempotency", owner, key]` → `IdempotencyRecord`, expiring after 24 hours.
 */
export const COUNTER = ["counters", "addresses"] as const;

/** The lowest id above the counter an address may hold (see the layout above). */
export const NEXT_TAKEN = ["counters", "addresses_next_taken"] as const;

/** Largest id: JSON numbers are exact up to 2^53 − 1. */
export const MAX_ID = Number.MAX_SAFE_INTEGER;

/** An address as stored under its global key. */
export interface AddressRecord {
  owner: string;
  address: Address;
}

/** The global record of an id. */
export function addressKey(id: number): Deno.KvKey {
  return ["addresses", id];
}

/** Prefix of every global record. */
export const ADDRESS_PREFIX: Deno.KvKey = ["addresses"];

/** The owner-index entry of an address. */
export function ownerKey(owner: string, id: number): Deno.KvKey {
  return ["owner_addresses", owner, id];
}

/** Prefix of one owner's index. */
export function ownerPrefix(owner: string): Deno.KvKey {
  return ["owner_addresses", owner];
}

/** Opaque page cursor: the last id of the page, base64url-encoded with a version tag. */
export function encodeCursor(lastId: number): string {
  return btoa(`a1:${lastId}`).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** Decodes a cursor from `encodeCursor`; anything else is a 400 `invalid-parameter`. */
export function decodeCursor(cursor: string): number {
  const invalid = new AppError(
    "invalid-parameter",
    "Query parameter cursor is not a cursor this server issued.",
  );
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(cursor)) throw invalid;
  let text: string;
  try {
    text = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    throw invalid;
  }
  const match = /^a1:([1-9][0-9]{0,15})$/.exec(text);
  const id = match ? Number(match[1]) : NaN;
  if (!Number.isSafeInteger(id)) throw invalid;
  return id;
}

/** How long an Idempotency-Key is kept: 24 hours. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** What an Idempotency-Key remembers: the address its first request created, as answered. */
export interface IdempotencyRecord {
  address: Address;
}

/** An Idempotency-Key, scoped to its owner. */
export function idempotencyKey(owner: string, key: string): Deno.KvKey {
  return ["idempotency", owner, key];
}
