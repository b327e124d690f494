import { AppError } from "../../lib/errors.ts";
import { type Address, isStoredAddress } from "../../lib/address.ts";

/**
 * The address book's KV layout, in one place (layout 4; store/layout/layout.ts has the version key,
 * docs/operations.md the layouts' history and docs/storage.md why the keys are so), and the
 * owners that may be part of its keys.
 *
 * - `["addresses", id]` → `AddressRecord`: the address with its owner and the ETag of its
 *   version. One read answers both "which address has this id" and "is this id held by anyone"
 *   (ids are global, owners are not).
 * - `["owner_addresses", owner, id]` → `IndexEntry`: the owner's index, a copy of the address and
 *   its ETag so a page of a listing is one range read. Written and deleted in the same atomic
 *   operation as the record (`setAddress`), so the two never disagree.
 * - `["owner_counts", owner]` → `KvU64`: what counts toward the owner's quota: their addresses
 *   plus their orphaned Idempotency-Key records (below). Changed only in the atomic operations
 *   that create or delete those: by a creation checked and set while a quota applies, added to
 *   with `sum` (unchecked, exact all the same) while none does; by a deletion added to with `sum`
 *   either way (checked and deleted when it reaches 0); absent means 0.
 * - `["counters", "addresses"]` → `KvU64`: the highest id ever allocated. Every id at or below it
 *   was reserved by a process for POST (id_blocks.ts) or taken by a v2 PUT; no address has an id
 *   above it, so an id above it has never been used.
 * - `["idempotency", owner, key]` → `IdempotencyRecord`, kept 24 hours. While its address
 *   exists it counts nothing (the address counts); once that address is deleted it is
 *   "orphaned" and counts one until it is swept after its 24 hours.
 */
export const COUNTER = ["counters", "addresses"] as const;

/**
 * Owner of every address created while authentication is off, and of those stored before
 * ownership existed (the anonymous caller of the gate is this owner).
 */
export const ANONYMOUS_OWNER = "";

/**
 * Longest owner: with 3 UTF-8 bytes per UTF-16 unit at most, `["idempotency", owner, key]` with
 * a 255-character key stays under KV's 2048-byte key limit.
 */
const MAX_OWNER_LENGTH = 512;

/** The 403 for an owner that cannot be part of a KV key; undefined for any other. */
export function ownerRefused(owner: string): AppError | undefined {
  if (owner.length > MAX_OWNER_LENGTH) {
    return new AppError(
      "forbidden",
      `An owner (the token's sub) has at most ${MAX_OWNER_LENGTH} characters.`,
    );
  }
  // KV encodes key strings as UTF-8: a lone surrogate would become U+FFFD, another owner's key.
  if (!owner.isWellFormed()) {
    return new AppError("forbidden", "An owner (the token's sub) must be well-formed Unicode.");
  }
  return undefined;
}

/** Largest id: JSON numbers are exact up to 2^53 − 1. */
export const MAX_ID = Number.MAX_SAFE_INTEGER;

/**
 * How far above the id counter a v2 PUT may create. A PUT above the counter moves the counter to
 * its id; without a bound one PUT at MAX_ID would leave POST no id to hand out. Within this bound
 * using up the id space takes billions of requests.
 */
export const MAX_PUT_AHEAD = 1_000_000;

/**
 * The schema version of the records this code writes: the layout that introduced their shape
 * (layout 4: the ETag stored with each version).
 */
export const RECORD_VERSION = 4;

/** An address as stored under its global key. */
export interface AddressRecord {
  /** Schema version; absent in layout 1. */
  v?: number;
  owner: string;
  address: Address;
  /**
   * The strong ETag of this version, quoted (lib/http/etag.ts `newVersionEtag`): made at each
   * write, so every version of every address has its own. Layout 4 on; a write keeps the KV
   * entry's own check for concurrency, so a precondition on it is never stale.
   */
  etag: string;
  /** The Idempotency-Key that created it, if any (its record is then `idempotencyKey(owner, key)`). */
  key?: string;
}

/** An owner-index entry: the record's address and ETag (layout 4 on). */
export interface IndexEntry {
  etag: string;
  address: Address;
}

/**
 * Adds to `op` the writes of a version of an address: its record and its owner-index entry,
 * both with the version's ETag. Every write of an address goes through here, so the two agree.
 */
export function setAddress(
  op: Deno.AtomicOperation,
  record: AddressRecord,
): Deno.AtomicOperation {
  const { owner, address, etag } = record;
  const entry: IndexEntry = { etag, address };
  return op.set(addressKey(address.id), record).set(ownerKey(owner, address.id), entry);
}

/** The quota count of an owner. */
export function countKey(owner: string): Deno.KvKey {
  return ["owner_counts", owner];
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

/** How long an Idempotency-Key is kept: 24 hours. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** What an Idempotency-Key remembers: the address its first request created, as answered. */
export interface IdempotencyRecord {
  /** Schema version; absent in layout 1 (such a record lives until KV expires it). */
  v?: number;
  address: Address;
  /** When it stops replaying (ms since the epoch); KV may keep it a while longer. */
  expiresAt?: number;
  /** Its address was deleted: it counts toward the quota and is kept until swept. */
  orphan?: boolean;
  /**
   * The ETag of the creation (the replayed ETag), kept when the record is rewritten. Layout 4
   * on; layouts 2 and 3 kept a `versionstamp` here instead, which the migration to layout 4
   * replaced in every record that still replays (one expired before has none: it never replays).
   */
  etag: string;
}

/** True when a key no longer replays (KV deletes expired entries only eventually). */
export function isExpired(record: Pick<IdempotencyRecord, "expiresAt">, now: number): boolean {
  return record.expiresAt !== undefined && record.expiresAt <= now;
}

/** An Idempotency-Key, scoped to its owner. */
export function idempotencyKey(owner: string, key: string): Deno.KvKey {
  return ["idempotency", owner, key];
}

/** Prefix of every Idempotency-Key record. */
export const IDEMPOTENCY_PREFIX: Deno.KvKey = ["idempotency"];

/** Prefix of one owner's Idempotency-Keys. */
export function idempotencyPrefix(owner: string): Deno.KvKey {
  return ["idempotency", owner];
}

/** A record as the migrations read it, whatever its layout: its owner, address and key if any. */
export interface OlderRecord {
  owner: string;
  address: Address;
  key?: string;
}

/**
 * The owner and address (and key) of a stored record of any layout: `{owner, address}` (with
 * `v` and `key` from layout 2, `etag` from layout 4), or a bare address stored before ownership
 * existed (the anonymous owner's).
 */
export function readRecord(entry: Deno.KvEntry<unknown>): OlderRecord {
  const value = entry.value as Partial<AddressRecord>;
  const id = entry.key[1];
  if (typeof value?.owner === "string" && isStoredAddress(value.address, id)) {
    return {
      owner: value.owner,
      address: value.address,
      ...(typeof value.key === "string" && { key: value.key }),
    };
  }
  // Stored before ownership existed: the anonymous owner's.
  if (isStoredAddress(value, id)) return { owner: ANONYMOUS_OWNER, address: value };
  throw new Error(`${JSON.stringify(entry.key)} holds no address: ${JSON.stringify(value)}`);
}
