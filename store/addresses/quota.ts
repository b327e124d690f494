import { AppError } from "../../lib/errors.ts";
import { countKey, idempotencyPrefix, type IdempotencyRecord, isExpired } from "./keys.ts";
import { atomicBudget, keySize } from "../kv/atomic_budget.ts";
import type { LayoutGuard } from "../layout/layout.ts";
import { withKvRetry } from "../kv/retry.ts";
import { getAll } from "../kv/read.ts";

/**
 * The per-owner quota (`MAX_ADDRESSES_PER_OWNER`): the owner's count, changed in the atomic
 * operation of every creation and deletion, and the sweeper of expired Idempotency-Keys that
 * gives back the units their orphaned records hold.
 *
 * While a quota applies, a creation reads the count, checks it and sets it (exact, and never past
 * the quota, across processes). While none does (`Infinity`), it adds to the count with KV's `sum`
 * and no check: the count stays exact (sums commute), and processes creating for one owner (the
 * anonymous owner of a server without authentication) do not make each other's operations fail on
 * that key. A quota set later finds the count right. A deletion adds to it with `sum` in both
 * cases (it cannot pass a quota, and a creation's check sees it), so deletions of one owner do not
 * conflict with each other; one that takes it to 0 checks it and deletes the key.
 */

/** True when `maxPerOwner` limits anything (`Infinity`: no quota). */
export function isLimited(maxPerOwner: number): boolean {
  return Number.isFinite(maxPerOwner);
}

/**
 * Adds `delta` (may be negative) to an owner's count in `op`, unchecked. KV's `sum` on a `KvU64`
 * wraps around 2^64, so a decrement is the sum of its complement.
 */
export function addToCount(op: Deno.AtomicOperation, owner: string, delta: number): void {
  if (delta === 0) return;
  const value = delta > 0 ? BigInt(delta) : (1n << 64n) - BigInt(-delta);
  op.sum(countKey(owner), value);
}

/** An owner's count as read (absent: 0). */
export function countOf(entry: Deno.KvEntryMaybe<Deno.KvU64>): number {
  return entry.value === null ? 0 : Number(entry.value.value);
}

/**
 * Writes an owner's new count into `op`; at 0 the key is deleted, so an owner with nothing
 * stored leaves nothing behind (an erased owner's name is not kept in a key).
 */
export function setCount(op: Deno.AtomicOperation, owner: string, count: number): void {
  if (count <= 0) op.delete(countKey(owner));
  else op.set(countKey(owner), new Deno.KvU64(BigInt(count)));
}

/** Reads the counts of several owners. */
export async function readCounts(
  kv: Deno.Kv,
  owners: readonly string[],
): Promise<Map<string, Deno.KvEntryMaybe<Deno.KvU64>>> {
  const read = await getAll<Deno.KvU64>(kv, owners.map((owner) => countKey(owner)));
  return new Map(owners.map((owner, i) => [owner, read[i]!]));
}

/** The 409 of a creation past the owner's quota. */
export function quotaExceeded(max: number): AppError {
  return new AppError(
    "quota-exceeded",
    `An owner stores at most ${max} addresses (Idempotency-Keys of deleted addresses count ` +
      "for 24 hours); delete some first.",
  );
}

// An owner at the quota would otherwise list their keys on every refused creation.
const SWEEP_INTERVAL_MS = 60_000;
const MAX_REMEMBERED = 10_000;

/**
 * Deletes an owner's expired Idempotency-Key records, giving back the quota the orphaned ones
 * held. Runs when a creation would pass the quota, at most once a minute per owner and process.
 */
export function createKeySweeper(kv: Deno.Kv, guard: LayoutGuard) {
  const swept = new Map<string, number>();

  /** Sweeps now; returns how many quota units it gave back. */
  async function sweep(owner: string, now = Date.now()): Promise<number> {
    const expired: Deno.KvEntry<IdempotencyRecord>[] = [];
    await withKvRetry(async () => {
      expired.length = 0;
      const entries = kv.list<IdempotencyRecord>({ prefix: idempotencyPrefix(owner) });
      for await (const e of entries) if (isExpired(e.value, now)) expired.push(e);
    });
    let released = 0;
    while (expired.length > 0) {
      const budget = atomicBudget();
      let n = 0;
      while (
        n < expired.length &&
        budget.take({ checks: 1, mutations: 1, keyBytes: keySize(expired[n]!.key) })
      ) n++;
      const chunk = expired.splice(0, n);
      const count = await withKvRetry(() => kv.get<Deno.KvU64>(countKey(owner)));
      const orphans = chunk.filter((e) => e.value.orphan).length;
      const op = guard.check(kv.atomic().check(count));
      for (const e of chunk) op.check(e).delete(e.key);
      setCount(op, owner, countOf(count) - orphans);
      if ((await withKvRetry(() => op.commit())).ok) {
        released += orphans;
        continue;
      }
      await guard.afterConflict();
      // Something changed (a creation, another sweep): keep what is still expired and unchanged.
      const fresh = await getAll<IdempotencyRecord>(kv, chunk.map((e) => e.key));
      for (const e of fresh) {
        if (e.value !== null && isExpired(e.value, now)) {
          expired.push(e as Deno.KvEntry<IdempotencyRecord>);
        }
      }
    }
    return released;
  }

  /** Sweeps unless this owner was swept in the last minute; returns the units given back. */
  async function maybeSweep(owner: string): Promise<number> {
    const now = Date.now();
    const last = swept.get(owner);
    if (last !== undefined && now - last < SWEEP_INTERVAL_MS) return 0;
    swept.delete(owner);
    swept.set(owner, now);
    if (swept.size > MAX_REMEMBERED) swept.delete(swept.keys().next().value!);
    return await sweep(owner, now);
  }

  return { sweep, maybeSweep };
}

/** The sweeper's interface. */
export type KeySweeper = ReturnType<typeof createKeySweeper>;

/** Reads the owner's count for a creation; past the quota, sweeps expired keys once, then refuses. */
export async function countForCreate(
  kv: Deno.Kv,
  sweeper: KeySweeper,
  owner: string,
  maxPerOwner: number,
): Promise<Deno.KvEntryMaybe<Deno.KvU64>> {
  for (let swept = false;; swept = true) {
    const count = await withKvRetry(() => kv.get<Deno.KvU64>(countKey(owner)));
    if (countOf(count) < maxPerOwner) return count;
    if (swept || await sweeper.maybeSweep(owner) === 0) throw quotaExceeded(maxPerOwner);
  }
}
