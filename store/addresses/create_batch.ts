import { DEFAULT_MAX_ADDRESSES_PER_OWNER } from "../../lib/config.ts";
import { AppError } from "../../lib/errors.ts";
import {
  addressAt,
  type AddressInput,
  addressInputOf,
  addressSizeBound,
} from "../../lib/address.ts";
import {
  addressKey,
  type AddressRecord,
  IDEMPOTENCY_TTL_MS,
  idempotencyKey,
  type IdempotencyRecord,
  RECORD_VERSION,
  setAddress,
} from "./keys.ts";
import { newVersionEtag } from "../../lib/http/etag.ts";
import type { PageTokens } from "./page_tokens.ts";
import type { ChangeLog } from "./change_log.ts";
import { WriteRecorder } from "./prepared_write.ts";
import { atomicBudget, type Cost } from "../kv/atomic_budget.ts";
import { backoffDelay, DEFAULT_RETRY, sleep, withKvRetry } from "../kv/retry.ts";
import { type Created, settleStoredKeys, type Waiter, type WriteOptions } from "./idempotency.ts";
import { idBlocks } from "./id_blocks.ts";
import { type LayoutGuard, NO_GUARD } from "../layout/layout.ts";
import {
  addToCount,
  countOf,
  isLimited,
  type KeySweeper,
  quotaExceeded,
  readCounts,
  setCount,
} from "./quota.ts";

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
  /** The KV's page tokens (store.ts reads the key at start-up); absent: made on first use. */
  pageTokens?: PageTokens;
  /** What every write commits through (one per process); absent: the store opens its own. */
  changeLog?: ChangeLog;
  /**
   * KV calls of reads by key at once before reads share calls (store/kv/read.ts `sharedReads`);
   * absent: LOCAL_READS_AT_ONCE, for a KV on this machine.
   */
  readsAtOnce?: number;
}

// Besides its creations a batch checks the layout (one check spare); each owner's count is part
// of the owner's first creation.
const BATCH_RESERVE = { checks: 2, mutations: 1 };

/**
 * Upper bounds of what a creation adds to its atomic operation (UTF-16 units × 3 ≥ UTF-8): the
 * check that its record is absent, the record and index entry, its key record if keyed, and, for
 * an owner new to the batch, the write of their count (and its check while a quota applies).
 */
function costOf(w: Waiter, newOwner: boolean, limited: boolean): Cost {
  const fields = addressSizeBound(w.input);
  const keyed = w.key === undefined ? 0 : 1;
  const counted = newOwner ? 1 : 0;
  const ownerBytes = w.owner.length * 3;
  // The change it makes (change_log.ts) is one more copy of the address, and one more key.
  return {
    mutations: 3 + keyed + counted,
    checks: 1 + keyed + (limited ? counted : 0),
    valueBytes: (3 + keyed) * (fields + ownerBytes + (w.key?.length ?? 0) + 160),
    keyBytes: 4 * ownerBytes + 128 + keyed * (ownerBytes + (w.key?.length ?? 0) + 32) +
      counted * (ownerBytes + 32),
  };
}

/** The ids among `ids` that an address holds already (read by contiguous runs). */
async function heldAmong(kv: Deno.Kv, ids: readonly number[]): Promise<number[]> {
  const held: number[] = [];
  const sorted = [...ids].sort((a, b) => a - b);
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    const selector = { start: addressKey(sorted[i]!), end: addressKey(sorted[j]! + 1) };
    await withKvRetry(async () => {
      for await (const e of kv.list(selector)) held.push(e.key[1] as number);
    });
    i = j + 1;
  }
  return held;
}

/**
 * The create batch (group commit): creations waiting in this process are committed together, in
 * one atomic operation per batch, with ids from this process's blocks (id_blocks.ts); each is
 * answered only after its batch committed. Each record is checked absent, so an id that turns out
 * to be held (an import wrote it) fails the batch, which drops that id and tries again.
 * An Idempotency-Key is written in the same atomic operation, checked absent, so a key and its
 * address exist together or not at all. While a quota applies, each owner's count is read,
 * checked and set; while none does, it is added to with `sum` (quota.ts).
 */
export function createIdAllocator(
  kv: Deno.Kv,
  options: AddressStoreOptions & { log: ChangeLog },
  sweeper: KeySweeper,
) {
  const log = options.log;
  const maxBatch = options.maxBatch ?? 200;
  const maxConflicts = options.maxConflicts ?? 50;
  const maxPerOwner = options.maxPerOwner ?? DEFAULT_MAX_ADDRESSES_PER_OWNER;
  const limited = isLimited(maxPerOwner);
  const guard = options.guard ?? NO_GUARD;
  const blocks = idBlocks(kv, guard, { maxConflicts });
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

  /** Commits `batch`, each creation or its refusal answered. */
  async function commitBatch(batch: Waiter[]): Promise<void> {
    for (let conflicts = 0;; conflicts++) {
      batch = await settleStoredKeys(kv, batch);
      if (batch.length === 0) return;
      let counts: Map<string, Deno.KvEntryMaybe<Deno.KvU64>> | undefined;
      if (limited) {
        counts = await readCounts(kv, [...new Set(batch.map((w) => w.owner))]);
        const admitted = await admit(batch, counts);
        if (admitted === undefined) continue;
        batch = admitted;
        if (batch.length === 0) return;
      }
      const ids = await blocks.next(batch.length);
      // The last await before the commit: a creation no longer wanted (its caller's deadline
      // passed) is answered with that and takes no id; the others keep the lowest ones.
      batch = stillWanted(batch);
      if (batch.length === 0) return;
      const used = ids.slice(0, batch.length);
      const op = new WriteRecorder();
      guard.check(op);
      const after = new Map<string, number>();
      for (const w of batch) after.set(w.owner, (after.get(w.owner) ?? 0) + delta(w));
      for (const [owner, added] of after) {
        if (counts === undefined) addToCount(op, owner, added);
        else {
          const count = counts.get(owner)!;
          op.check(count);
          setCount(op, owner, countOf(count) + added);
        }
      }
      const expiresAt = Date.now() + IDEMPOTENCY_TTL_MS;
      const stored = used.map((id, i) => {
        const w = batch[i]!;
        const address = addressAt(id, w.input);
        const etag = newVersionEtag();
        const record: AddressRecord = { v: RECORD_VERSION, owner: w.owner, address, etag };
        if (w.key !== undefined) record.key = w.key;
        setAddress(op.check({ key: addressKey(id), versionstamp: null }), record);
        if (w.key !== undefined) {
          const key = idempotencyKey(w.owner, w.key);
          const kept: IdempotencyRecord = { v: RECORD_VERSION, address, etag, expiresAt };
          op.check(w.replacing ?? { key, versionstamp: null })
            .set(key, kept, { expireIn: IDEMPOTENCY_TTL_MS });
        }
        return { address, etag };
      });
      const changes = stored.map(({ address, etag }, i) => ({
        owner: batch[i]!.owner,
        change: { type: "created" as const, id: address.id, address, etag },
      }));
      const result = await log.commit(op.prepare(changes));
      if (result.ok) {
        blocks.drop(used);
        stored.forEach((s, i) => batch[i]!.resolve({ ...s, replayed: false }));
        return;
      }
      await guard.afterConflict();
      // A key or a count changed meanwhile, or an id is held: those ids are not ours to use.
      blocks.drop(await heldAmong(kv, used));
      if (conflicts + 1 >= maxConflicts) {
        throw new AppError("service-unavailable", "The create batch stayed contended.", {
          retryAfter: 1,
        });
      }
      await sleep(backoffDelay(Math.min(conflicts, 6), DEFAULT_RETRY));
    }
  }

  /** The creations still wanted; the others are rejected with the reason `wanted` gave. */
  function stillWanted(batch: Waiter[]): Waiter[] {
    if (batch.every((w) => w.wanted === undefined)) return batch;
    return batch.filter((w) => {
      try {
        w.wanted?.();
        return true;
      } catch (reason) {
        w.reject(reason);
        return false;
      }
    });
  }

  /** Takes the next batch off the queue within KV's limits for one atomic operation. */
  function takeBatch(): Waiter[] {
    const budget = atomicBudget(BATCH_RESERVE);
    const owners = new Set<string>();
    let n = 0;
    while (n < queue.length && n < maxBatch) {
      const w = queue[n]!;
      // The first creation goes whatever its size: alone it is within KV's limits.
      if (!budget.take(costOf(w, !owners.has(w.owner), limited)) && n > 0) break;
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
          await commitBatch(batch);
        } catch (error) {
          for (const w of batch) w.reject(error);
        }
      }
    } finally {
      draining = false;
    }
  }

  /** Queues one creation; resolves once it is committed (or its key replayed). */
  function allocate(
    owner: string,
    input: AddressInput,
    key?: string,
    options: WriteOptions = {},
  ): Promise<Created> {
    return new Promise((resolve, reject) => {
      queue.push({
        owner,
        input: addressInputOf(input),
        key,
        wanted: options.wanted,
        replacing: undefined,
        resolve,
        reject,
      });
      if (!draining) void drain();
    });
  }

  return { allocate };
}
