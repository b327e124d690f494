import { AppError } from "../lib/errors.ts";
import { type AddressInput, sameAddress } from "../lib/address.ts";
import type { Created } from "./address_ids.ts";
import { idempotencyKey, type IdempotencyRecord, isExpired } from "./address_keys.ts";
import { getAll } from "./kv/read.ts";

/** A creation waiting for its batch (address_ids.ts), with its Idempotency-Key if any. */
export interface Waiter {
  owner: string;
  input: AddressInput;
  key: string | undefined;
  /** An expired record of the same key that this creation overwrites (checked unchanged). */
  replacing?: Deno.KvEntry<IdempotencyRecord> | undefined;
  resolve(value: Created): void;
  reject(reason: unknown): void;
}

/** The error for a key used before with another body. */
export function keyReused(): AppError {
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
        versionstamp: entry.value.versionstamp ?? entry.versionstamp,
        replayed: true,
      });
    } else w.reject(keyReused());
  });
  return settled.size === 0 ? batch : batch.filter((w) => !settled.has(w));
}
