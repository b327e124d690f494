import type { Address } from "../../lib/address.ts";
import {
  addressKey,
  countKey,
  idempotencyPrefix,
  type IdempotencyRecord,
  type IndexEntry,
  ownerKey,
  ownerPrefix,
} from "./keys.ts";
import { atomicBudget, keySize } from "../kv/atomic_budget.ts";
import { withKvRetry } from "../kv/retry.ts";
import type { LayoutGuard } from "../layout/layout.ts";
import { countOf, setCount } from "./quota.ts";
import type { ChangeLog } from "./change_log.ts";
import { WriteRecorder } from "./prepared_write.ts";
import type { OwnerPages } from "./owner_pages.ts";

/** An owner's data as a whole: their export, and their erasure. */

/** Addresses read per KV range read while exporting. */
const EXPORT_PAGE = 500;

/**
 * Every address of an owner by ascending id, from their index, one range read (`pages.range`) per
 * page as the consumer asks for more. Each page is a consistent read; an address created or
 * deleted while the export runs may or may not be in it, one stored before it began and not
 * deleted always is.
 */
export async function* ownerAddresses(
  pages: OwnerPages,
  owner: string,
): AsyncGenerator<Address, void, undefined> {
  let after = 0;
  for (;;) {
    const page = await pages.range(owner, after, EXPORT_PAGE);
    for (const e of page) yield e.value.address;
    if (page.length < EXPORT_PAGE) return;
    after = page[page.length - 1]!.key[2] as number;
  }
}

/**
 * Deletes a batch of entries listed under `prefix` (from `start`), each checked unchanged, with
 * the owner's count lowered by what `released` says they held. Returns the entries deleted
 * (none: nothing is left) and where to go on.
 */
async function eraseBatch<T>(
  kv: Deno.Kv,
  { guard, log }: { guard: LayoutGuard; log: ChangeLog },
  owner: string,
  selector: Deno.KvListSelector,
  also: (entry: Deno.KvEntry<T>) => Deno.KvKey[],
  released: (entry: Deno.KvEntry<T>) => number,
  deletedId?: (entry: Deno.KvEntry<T>) => number,
): Promise<Deno.KvEntry<T>[]> {
  for (;;) {
    const entries: Deno.KvEntry<T>[] = [];
    await withKvRetry(async () => {
      entries.length = 0;
      // The count's check and write fit in the slack the budget leaves below KV's limits.
      const budget = atomicBudget();
      for await (const e of kv.list<T>(selector, { limit: 100 })) {
        const keys = [e.key, ...also(e)];
        const keyBytes = keys.reduce((n, k) => n + keySize(k), 0);
        // With an address, the change that says it was deleted (change_log.ts).
        const changed = deletedId === undefined ? 0 : 1;
        const cost = { checks: 1, mutations: keys.length + changed, keyBytes: keyBytes * 2 };
        if (!budget.take(cost)) break;
        entries.push(e);
      }
    });
    if (entries.length === 0) return entries;
    const count = await withKvRetry(() => kv.get<Deno.KvU64>(countKey(owner)));
    const op = new WriteRecorder();
    guard.check(op).check(count);
    let units = 0;
    for (const e of entries) {
      op.check(e).delete(e.key);
      for (const key of also(e)) op.delete(key);
      units += released(e);
    }
    setCount(op, owner, countOf(count) - units);
    const changes = deletedId === undefined
      ? []
      : entries.map((e) => ({ owner, change: { type: "deleted" as const, id: deletedId(e) } }));
    if ((await log.commit(op.prepare(changes))).ok) return entries;
    // A concurrent write of this owner: read the batch again.
    await guard.afterConflict();
  }
}

/**
 * Erases an owner: their addresses (record and index entry, checked by the index entry, which
 * is always written with the record, so it changes whenever the record does), then their Idempotency-Key
 * records, in bounded atomic batches that also lower the count; at zero the count key goes too.
 * A creation racing the erasure either lands before a batch reads its range (and is erased) or
 * after (and stays); the count stays exact either way.
 */
export async function eraseOwner(
  kv: Deno.Kv,
  guard: LayoutGuard,
  log: ChangeLog,
  owner: string,
): Promise<number> {
  let erased = 0;
  const prefix = ownerPrefix(owner);
  let after = 0;
  for (;;) {
    const selector = after > 0 ? { prefix, start: ownerKey(owner, after + 1) } : { prefix };
    const batch = await eraseBatch<IndexEntry>(
      kv,
      { guard, log },
      owner,
      selector,
      (e) => [addressKey(e.key[2] as number)],
      () => 1,
      (e) => e.key[2] as number,
    );
    if (batch.length === 0) break;
    erased += batch.length;
    after = batch[batch.length - 1]!.key[2] as number;
  }
  // An orphaned key holds a unit; one whose address was erased above holds none.
  const keys = { prefix: idempotencyPrefix(owner) };
  while (
    (await eraseBatch<IdempotencyRecord>(
      kv,
      { guard, log },
      owner,
      keys,
      () => [],
      (e) => e.value.orphan ? 1 : 0,
    )).length > 0
  ) { /* next batch */ }
  return erased;
}
