import { AppError } from "../../lib/errors.ts";
import { type Address, type AddressInput, sameAddress } from "../../lib/address.ts";
import { type AddressRecord, idempotencyKey, type IdempotencyRecord, isExpired } from "./keys.ts";
import { getAll } from "../kv/read.ts";
import { withKvRetry } from "../kv/retry.ts";

/**
 * Idempotency-Keys of creations: a key's record (store/addresses/keys.ts) is written in the
 * creation's atomic operation (create_batch.ts); here a stored key replays its creation or
 * refuses another body, and a duplicate still running in this process waits for the first.
 */

/** A created address; `replayed` when an Idempotency-Key answered with an earlier creation. */
export interface Created {
  address: Address;
  etag: string;
  replayed: boolean;
}

/** What a caller may tell a write besides its data. */
export interface WriteOptions {
  /**
   * Asked right before the write commits (after every read it needs): throws when the write is
   * no longer wanted (the caller's deadline passed), and the write commits nothing and rejects
   * with that error. A write committed just before it would have thrown stands.
   */
  wanted?: (() => void) | undefined;
}

/** A creation waiting for its batch (create_batch.ts), with its Idempotency-Key if any. */
export interface Waiter {
  owner: string;
  input: AddressInput;
  key: string | undefined;
  wanted?: (() => void) | undefined;
  /** An expired record of the same key that this creation overwrites (checked unchanged). */
  replacing?: Deno.KvEntry<IdempotencyRecord> | undefined;
  resolve(value: Created): void;
  reject(reason: unknown): void;
}

/** The error for a key used before with another body. */
function keyReused(): AppError {
  return new AppError(
    "idempotency-key-reused",
    "This Idempotency-Key was used with another request body.",
  );
}

/**
 * Answers the keyed waiters whose key is stored already (a replay, or 422 for another body) and
 * returns the others. An expired record of the key does not replay: the waiter notes it in
 * `replacing`, and its creation overwrites it.
 */
export async function settleStoredKeys(kv: Deno.Kv, batch: Waiter[]): Promise<Waiter[]> {
  const keyed = batch.filter((w) => w.key !== undefined);
  if (keyed.length === 0) return batch;
  const settled = new Set<Waiter>();
  const now = Date.now();
  const entries = await getAll<IdempotencyRecord>(
    kv,
    keyed.map((w) => idempotencyKey(w.owner, w.key!)),
  );
  entries.forEach((entry, i) => {
    const w = keyed[i]!;
    w.replacing = undefined;
    if (entry.value === null) return;
    if (isExpired(entry.value, now)) {
      w.replacing = entry as Deno.KvEntry<IdempotencyRecord>;
      return;
    }
    settled.add(w);
    if (sameAddress(entry.value.address, w.input)) {
      w.resolve({
        address: entry.value.address,
        etag: entry.value.etag,
        replayed: true,
      });
    } else w.reject(keyReused());
  });
  return settled.size === 0 ? batch : batch.filter((w) => !settled.has(w));
}

/** Creates an address (with the key that makes it idempotent, if any). */
export type Create = (
  owner: string,
  input: AddressInput,
  key?: string,
  options?: WriteOptions,
) => Promise<Created>;

/**
 * `create` with keyed creations running in this process tracked: a duplicate (same owner and
 * key) waits for the first and replays it, or is 409 `request-in-progress` with another body.
 * Duplicates in other processes meet at the key's record instead (`settleStoredKeys`).
 */
export function deduplicateInFlight(create: Create): Create {
  const running = new Map<string, { input: AddressInput; done: Promise<Created> }>();
  return async (owner, input, key, options) => {
    if (key === undefined) return await create(owner, input, undefined, options);
    const slot = JSON.stringify([owner, key]);
    for (let first = running.get(slot); first !== undefined; first = running.get(slot)) {
      if (!sameAddress(first.input, input)) {
        throw new AppError(
          "request-in-progress",
          "A request with this Idempotency-Key and another body is still in progress.",
        );
      }
      try {
        return { ...(await first.done), replayed: true };
      } catch {
        // The first attempt failed and stored nothing: this request tries itself.
      }
    }
    const done = create(owner, input, key, options);
    running.set(slot, { input, done });
    try {
      return await done;
    } finally {
      running.delete(slot);
    }
  };
}

/**
 * Adds to the atomic operation deleting `entry`'s address what that does to the Idempotency-Key
 * that created it: a key record still kept becomes an orphan (checked unchanged) and holds the
 * owner's quota unit until a sweep deletes it; an expired one is deleted. True when the key now
 * holds the unit, so the deletion must not give it back.
 */
export async function orphanKeyOf(
  kv: Deno.Kv,
  op: Deno.AtomicOperation,
  entry: Deno.KvEntry<AddressRecord>,
): Promise<boolean> {
  const { owner, key, address } = entry.value;
  if (key === undefined) return false;
  const keyed = await withKvRetry(() => kv.get<IdempotencyRecord>(idempotencyKey(owner, key)));
  const kept = keyed.value;
  if (kept === null || kept.address.id !== address.id || kept.orphan) return false;
  op.check(keyed);
  if (isExpired(kept, Date.now())) {
    op.delete(keyed.key);
    return false;
  }
  // Kept without expiry: only a sweep may delete it, giving the unit back.
  const orphan: IdempotencyRecord = { ...kept, orphan: true };
  op.set(keyed.key, orphan);
  return true;
}
