import {
  ADDRESS_PREFIX,
  type AddressRecord,
  countKey,
  ownerKey,
  readRecord,
} from "../addresses/keys.ts";
import { atomicBudget, keySize, valueSize } from "../kv/atomic_budget.ts";
import { withKvRetry } from "../kv/retry.ts";
import type { MigrationStep } from "./migrate.ts";

/** The schema version of layout 2's records (and index entries: bare addresses). */
const V2 = 2;

/** Layout 1's marker of the start-up migration that gave unowned addresses an owner. */
const OWNERS_MARKER: Deno.KvKey = ["migrations", "address_owners"];

/**
 * Layout 1 → 2: every address record gets its schema version (and an owner, if it was stored
 * before ownership: the anonymous one), its index entry is rewritten with it (same versionstamp:
 * the ETag changes once), and each owner's count is added up (`KvU64` sums, so a batch adds
 * exactly what it rewrote). Layout 1 Idempotency-Key records stay as they are: they expire
 * within a day and, their addresses naming no key, never become orphans.
 */
export const MIGRATION_V2: MigrationStep = {
  to: 2,
  what: "address records get their schema version; owners get their quota counts",
  async batch(kv, cursor, op) {
    const budget = atomicBudget();
    const entries: Deno.KvEntry<unknown>[] = [];
    let next: string | undefined;
    let more = false;
    await withKvRetry(async () => {
      entries.length = 0;
      next = undefined;
      more = false;
      const owners = new Set<string>();
      const iter = kv.list({ prefix: ADDRESS_PREFIX }, cursor === undefined ? {} : { cursor });
      for await (const e of iter) {
        const { owner, address } = readRecord(e);
        const counted = owners.has(owner) ? 0 : 1;
        const fits = budget.take({
          checks: 1,
          mutations: 2 + counted,
          keyBytes: keySize(e.key) + keySize(ownerKey(owner, address.id)) +
            counted * keySize(countKey(owner)),
          valueBytes: 2 * valueSize({ v: V2, owner, address }),
        });
        if (!fits) {
          more = true;
          break;
        }
        owners.add(owner);
        entries.push(e);
        next = iter.cursor;
      }
    });
    const counts = new Map<string, number>();
    for (const e of entries) {
      const { owner, address } = readRecord(e);
      const record: Omit<AddressRecord, "etag"> = { v: V2, owner, address };
      op.check(e).set(e.key, record).set(ownerKey(owner, address.id), address);
      counts.set(owner, (counts.get(owner) ?? 0) + 1);
    }
    for (const [owner, n] of counts) op.sum(countKey(owner), BigInt(n));
    return { cursor: more ? next : undefined, items: entries.length };
  },
  finish(op) {
    op.delete(OWNERS_MARKER);
  },
};
