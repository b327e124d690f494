import { DEFAULT_MAX_ADDRESSES_PER_OWNER } from "../../lib/config.ts";
import { AppError } from "../../lib/errors.ts";
import {
  addressAt,
  type AddressInput,
  addressInputOf,
  addressSizeBound,
} from "../../lib/address.ts";
import {
  ADDRESS_PREFIX,
  addressKey,
  type AddressRecord,
  COUNTER,
  countKey,
  IDEMPOTENCY_TTL_MS,
  idempotencyKey,
  type IdempotencyRecord,
  MAX_ID,
  NEXT_TAKEN,
  ownerKey,
  RECORD_VERSION,
} from "./keys.ts";
import { atomicBudget, type Cost } from "../kv/atomic_budget.ts";
import { backoffDelay, DEFAULT_RETRY, sleep, withKvRetry } from "../kv/retry.ts";
import { type Created, settleStoredKeys, type Waiter } from "./idempotency.ts";
import { type IdState, idState, readIdState } from "./id_counter.ts";
import { type LayoutGuard, NO_GUARD } from "../layout/layout.ts";
import { countOf, type KeySweeper, quotaExceeded, readCounts, setCount } from "./quota.ts";

/** Tuning of the group commit that allocates ids. */
export interface AddressStoreOptions {
  /** Most creations committed in one atomic operation (also bounded by KV's limits). */
  maxBatch?: number;
  /** Conflicts on the counter (other processes) retried before giving up with 503. */
  maxConflicts?: number;
  /**
   * `MAX_ADDRESSES_PER_OWNER`: creations past it are 409 `quota-exceeded`; `Infinity`: none.
   * Absent: DEFAULT_MAX_ADDRESSES_PER_OWNER.
   */
  maxPerOwner?: number;
  /** The layout this process opened; every write checks it (store/layout/layout.ts). */
  guard?: LayoutGuard;
}

// Besides its creations a batch checks the layout and the counter, and writes the counter and
// NEXT_TAKEN (one mutation spare); each owner's count is part of the owner's first creation.
const BATCH_RESERVE = { checks: 2, mutations: 3 };

/**
 * Upper bounds of what a creation adds to its atomic operation (UTF-16 units × 3 ≥ UTF-8): the
 * record and index entry, its key record if keyed, and, for an owner new to the batch, the check
 * and write of their count.
 */
function costOf(w: Waiter, newOwner: boolean): Cost {
  const fields = addressSizeBound(w.input);
  const keyed = w.key === undefined ? 0 : 1;
  const counted = newOwner ? 1 : 0;
  const ownerBytes = w.owner.length * 3;
  return {
    mutations: 2 + keyed + counted,
    checks: keyed + counted,
    valueBytes: (2 + keyed) * (fields + ownerBytes + (w.key?.length ?? 0) + 120),
    keyBytes: 2 * ownerBytes + 64 + keyed * (ownerBytes + (w.key?.length ?? 0) + 32) +
      counted * (ownerBytes + 32),
  };
}

/** The id state and the counts of a batch's owners; one read when they are few. */
async function readBatchState(
  kv: Deno.Kv,
  owners: string[],
): Promise<[IdState, Map<string, Deno.KvEntryMaybe<Deno.KvU64>>]> {
  if (owners.length > 8) return await Promise.all([readIdState(kv), readCounts(kv, owners)]);
  const [counter, nextTaken, ...counts] = await withKvRetry(() =>
    kv.getMany<Deno.KvU64[]>([COUNTER, NEXT_TAKEN, ...owners.map((owner) => countKey(owner))])
  );
  return [idState(counter!, nextTaken!), new Map(owners.map((owner, i) => [owner, counts[i]!]))];
}

/**
 * The create batch (group commit): creations waiting in this process are committed together, one counter read
 * and one atomic operation per batch; each is answered only after its batch committed.
 *
 * Why ids stay unique across processes sharing one KV: the counter only advances in an atomic
 * operation that checks it, and an id above the counter is only ever taken by a v2 PUT that also
 * checks the counter and rewrites it (same value, new versionstamp), lowering NEXT_TAKEN in the
 * same operation. So neither NEXT_TAKEN nor the ids a batch skips because an address holds them
 * (read after the counter) can change before the batch commits unnoticed: any PUT above the
 * counter in between fails the batch's check, and the batch re-reads.
 * An Idempotency-Key is written in the same atomic operation, checked absent, so a key and its
 * address exist together or not at all.
 */
export function createIdAllocator(
  kv: Deno.Kv,
  options: AddressStoreOptions,
  sweeper: KeySweeper,
) {
  const maxBatch = options.maxBatch ?? 200;
  const maxConflicts = options.maxConflicts ?? 50;
  const maxPerOwner = options.maxPerOwner ?? DEFAULT_MAX_ADDRESSES_PER_OWNER;
  const guard = options.guard ?? NO_GUARD;
  const queue: Waiter[] = [];
  let draining = false;

  /** What a creation adds to its owner's count: an orphaned key it overwrites gives one back. */
  function delta(w: Waiter): number {
    return w.replacing?.value.orphan ? 0 : 1;
  }

  /**
   * Refuses the waiters past their owner's quota; returns the others, or undefined when a sweep
   * of expired keys gave quota back and the counts must be read again.
   */
  async function admit(
    batch: Waiter[],
    counts: Map<string, Deno.KvEntryMaybe<Deno.KvU64>>,
  ): Promise<Waiter[] | undefined> {
    const after = new Map<string, number>();
    const admitted: Waiter[] = [];
    const refused: Waiter[] = [];
    for (const w of batch) {
      const next = (after.get(w.owner) ?? countOf(counts.get(w.owner)!)) + delta(w);
      if (next > maxPerOwner) refused.push(w);
      else {
        after.set(w.owner, next);
        admitted.push(w);
      }
    }
    if (refused.length === 0) return batch;
    let released = 0;
    for (const owner of new Set(refused.map((w) => w.owner))) {
      released += await sweeper.maybeSweep(owner);
    }
    if (released > 0) return undefined;
    // One owner over the quota does not hold back the others in the batch.
    for (const w of refused) w.reject(quotaExceeded(maxPerOwner));
    return admitted;
  }

  /** Commits a prefix of `batch`; returns the waiters left for the next round. */
  async function commitBatch(batch: Waiter[]): Promise<Waiter[]> {
    for (let conflicts = 0;; conflicts++) {
      batch = await settleStoredKeys(kv, batch);
      if (batch.length === 0) return [];
      const owners = [...new Set(batch.map((w) => w.owner))];
      const [state, counts] = await readBatchState(kv, owners);
      const admitted = await admit(batch, counts);
      if (admitted === undefined) continue;
      batch = admitted;
      if (batch.length === 0) return [];
      const { last, nextTaken } = state;
      // Ids above the counter that v2 PUTs created are skipped, not handed out again. They are
      // looked up only when NEXT_TAKEN says the batch may reach one (or is unknown).
      const taken = new Set<number>();
      let bound = MAX_ID;
      let listed = false, full = false;
      if (nextTaken === null || (nextTaken !== 0 && nextTaken <= last + batch.length)) {
        const limit = batch.length + 1;
        await withKvRetry(async () => {
          taken.clear();
          const selector = { prefix: ADDRESS_PREFIX, start: addressKey(last + 1) };
          for await (const e of kv.list(selector, { limit })) taken.add(e.key[1] as number);
        });
        listed = true;
        // With a full page, ids past its last entry are unknown: allocate only up to it.
        full = taken.size === limit;
        if (full) bound = Math.max(...taken);
      }
      const ids: number[] = [];
      let next = last;
      while (ids.length < batch.length && next < bound) {
        next++;
        if (!taken.has(next)) ids.push(next);
      }
      if (next === last) {
        throw new AppError("service-unavailable", "No address id is left to hand out.");
      }
      const op = guard.check(kv.atomic())
        .check(state.counter)
        .set(COUNTER, new Deno.KvU64(BigInt(next)));
      if (listed) {
        // The lowest taken id past the new counter; past a full page nothing is known.
        let after = 0;
        for (const id of taken) if (id > next && (after === 0 || id < after)) after = id;
        if (after === 0 && full) after = next + 1;
        if (after !== nextTaken) op.set(NEXT_TAKEN, new Deno.KvU64(BigInt(after)));
      }
      // Only the waiters that get an id are committed, so only they count.
      const after = new Map<string, number>();
      for (const w of batch.slice(0, ids.length)) {
        after.set(w.owner, (after.get(w.owner) ?? countOf(counts.get(w.owner)!)) + delta(w));
      }
      for (const [owner, count] of after) {
        op.check(counts.get(owner)!);
        setCount(op, owner, count);
      }
      const expiresAt = Date.now() + IDEMPOTENCY_TTL_MS;
      const addresses = ids.map((id, i) => {
        const w = batch[i]!;
        const address = addressAt(id, w.input);
        const record: AddressRecord = { v: RECORD_VERSION, owner: w.owner, address };
        if (w.key !== undefined) record.key = w.key;
        op.set(addressKey(id), record).set(ownerKey(w.owner, id), address);
        if (w.key !== undefined) {
          const key = idempotencyKey(w.owner, w.key);
          const kept: IdempotencyRecord = { v: RECORD_VERSION, address, expiresAt };
          op.check(w.replacing ?? { key, versionstamp: null })
            .set(key, kept, { expireIn: IDEMPOTENCY_TTL_MS });
        }
        return address;
      });
      const result = await withKvRetry(() => op.commit());
      if (result.ok) {
        addresses.forEach((address, i) =>
          batch[i]!.resolve({ address, versionstamp: result.versionstamp, replayed: false })
        );
        return batch.slice(ids.length);
      }
      await guard.afterConflict();
      if (conflicts + 1 >= maxConflicts) {
        throw new AppError("service-unavailable", "The id counter stayed contended.", {
          retryAfter: 1,
        });
      }
      await sleep(backoffDelay(Math.min(conflicts, 6), DEFAULT_RETRY));
    }
  }

  /** Takes the next batch off the queue within KV's limits for one atomic operation. */
  function takeBatch(): Waiter[] {
    const budget = atomicBudget(BATCH_RESERVE);
    const owners = new Set<string>();
    let n = 0;
    while (n < queue.length && n < maxBatch) {
      const w = queue[n]!;
      // The first creation goes whatever its size: alone it is within KV's limits.
      if (!budget.take(costOf(w, !owners.has(w.owner))) && n > 0) break;
      owners.add(w.owner);
      n++;
    }
    return queue.splice(0, n);
  }

  async function drain(): Promise<void> {
    draining = true;
    try {
      while (queue.length > 0) {
        const batch = takeBatch();
        try {
          const left = await commitBatch(batch);
          queue.unshift(...left);
        } catch (error) {
          for (const w of batch) w.reject(error);
        }
      }
    } finally {
      draining = false;
    }
  }

  /** Queues one creation; resolves once it is committed (or its key replayed). */
  function allocate(owner: string, input: AddressInput, key?: string): Promise<Created> {
    return new Promise((resolve, reject) => {
      queue.push({
        owner,
        input: addressInputOf(input),
        key,
        replacing: undefined,
        resolve,
        reject,
      });
      if (!draining) void drain();
    });
  }

  return { allocate };
}
