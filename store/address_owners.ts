import { ANONYMOUS_OWNER } from "../lib/caller.ts";
import type { Address } from "../lib/schemas.ts";
import { ADDRESS_PREFIX, type AddressRecord, ownerKey } from "./address_keys.ts";
import { withKvRetry } from "./kv_retry.ts";

const MIGRATED = ["migrations", "address_owners"] as const;
// Each migrated address is one check and two sets; KV allows 100 checks per atomic operation.
const CHUNK = 90;

function isRecord(value: unknown): value is AddressRecord {
  return typeof value === "object" && value !== null && "owner" in value && "address" in value;
}

/**
 * Gives every address stored before ownership existed (a bare `Address` under `["addresses", id]`)
 * to the anonymous owner, with its owner-index entry. Runs at start-up before the store serves.
 *
 * Idempotent and safe when two processes start together: each address is rewritten with a check
 * of the entry it read, so a concurrent migration makes the loser re-read and find it done; the
 * marker, set last, lets later start-ups skip the scan. Returns how many addresses it migrated.
 */
export async function migrateUnownedAddresses(kv: Deno.Kv): Promise<number> {
  const marker = await withKvRetry(() => kv.get(MIGRATED));
  if (marker.value !== null) return 0;
  let migrated = 0;
  const migrate = async (entries: Deno.KvEntry<unknown>[]): Promise<void> => {
    const op = kv.atomic();
    for (const entry of entries) {
      const address = entry.value as Address;
      const record: AddressRecord = { owner: ANONYMOUS_OWNER, address };
      op.check(entry).set(entry.key, record).set(ownerKey(ANONYMOUS_OWNER, address.id), address);
    }
    if ((await withKvRetry(() => op.commit())).ok) {
      migrated += entries.length;
      return;
    }
    // Another process migrated (or changed) one of them: redo what is still unowned, one by one.
    for (const old of entries) {
      const entry = await withKvRetry(() => kv.get(old.key));
      if (entry.value !== null && !isRecord(entry.value)) await migrate([entry]);
    }
  };
  let pending: Deno.KvEntry<unknown>[] = [];
  for await (const entry of kv.list({ prefix: ADDRESS_PREFIX })) {
    if (isRecord(entry.value)) continue;
    pending.push(entry);
    if (pending.length === CHUNK) {
      await migrate(pending);
      pending = [];
    }
  }
  if (pending.length > 0) await migrate(pending);
  await withKvRetry(() => kv.set(MIGRATED, { at: new Date().toISOString() }));
  return migrated;
}
