import { AppError } from "../lib/errors.ts";
import type { Address, AddressInput } from "../lib/schemas.ts";
import {
  ADDRESS_PREFIX,
  addressKey,
  type AddressRecord,
  COUNTER,
  IDEMPOTENCY_TTL_MS,
  idempotencyKey,
  type IdempotencyRecord,
  MAX_ID,
  NEXT_TAKEN,
  ownerKey,
} from "./address_keys.ts";
import { backoffDelay, DEFAULT_RETRY, sleep, withKvRetry } from "./kv_retry.ts";

/** A created address; `replayed` when an Idempotency-Key answered with an earlier creation. */
export interface Created {
  address: Address;
  versionstamp: string;
  replayed: boolean;
}

/** Tuning of the group commit that allocates ids. */
export interface AddressStoreOptions {
  /** Most creations committed in one atomic operation (KV allows 1000 mutations, 100 checks). */
  maxBatch?: number;
  /** Conflicts on the counter (other processes) retried before giving up with 503. */
  maxConflicts?: number;
}

interface Waiter {
  owner: string;
  input: AddressInput;
  key: string | undefined;
  resolve(value: Created): void;
  reject(reason: unknown): void;
}

// Deno KV limits one atomic operation to 1000 mutations, 100 checks, 800 KiB of mutation data
// and 80 KiB of keys; a batch stays below each.
// The counter takes one mutation and one check, NEXT_TAKEN one mutation.
const MAX_MUTATIONS = 997;
const MAX_CHECKS = 99;
const MAX_VALUE_BYTES = 700_000;
const MAX_KEY_BYTES = 70_000;

/** Upper bounds of what a creation adds to its atomic operation (UTF-16 units × 3 ≥ UTF-8). */
function costOf(w: Waiter) {
  const text = w.input.name.length + w.input.city.length + w.input.postalCode.length;
  const keyed = w.key === undefined ? 0 : 1;
  const ownerBytes = w.owner.length * 3;
  return {
    mutations: 2 + keyed,
    checks: keyed,
    values: (2 + keyed) * (text * 3 + ownerBytes + 100),
    keys: 2 * ownerBytes + 64 + keyed * (ownerBytes + (w.key?.length ?? 0) + 32),
  };
}

/** True when an Idempotency-Key's first creation was made from the same input. */
export function sameInput(a: AddressInput, b: AddressInput): boolean {
  return a.name === b.name && a.city === b.city && a.postalCode === b.postalCode;
}

/** The error for a key used before with another body. */
export function keyReused(): AppError {
  return new AppError(
    "idempotency-key-reused",
    "This Idempotency-Key was used with another request body.",
  );
}

/** The id counter and NEXT_TAKEN, read in one snapshot. */
export interface IdState {
  counter: Deno.KvEntryMaybe<Deno.KvU64>;
  /** The last id POST handed out (or skipped as taken). */
  last: number;
  /**
   * No address has an id above `last` and below this one; 0 when no address is above `last`;
   * null when unknown (a KV written before NEXT_TAKEN existed, or a fresh one).
   */
  nextTaken: number | null;
}

/** Reads the counter and NEXT_TAKEN together. */
export async function readIdState(kv: Deno.Kv): Promise<IdState> {
  const [counter, nextTaken] = await withKvRetry(() =>
    kv.getMany<[Deno.KvU64, Deno.KvU64]>([COUNTER, NEXT_TAKEN])
  );
  return {
    counter,
    last: counter.value === null ? 0 : Number(counter.value.value),
    nextTaken: nextTaken.value === null ? null : Number(nextTaken.value.value),
  };
}

/**
 * Adds to a PUT's atomic operation what creating `id` means for POST's ids. Above the counter,
 * POST might hand the id out next: the counter is checked and rewritten (same value, new
 * versionstamp), so any batch that read it before fails and re-reads, and NEXT_TAKEN comes down
 * to the id. Every write of NEXT_TAKEN rewrites the counter it was read with, so checking the
 * counter covers both.
 */
export function notePutAt(op: Deno.AtomicOperation, state: IdState, id: number): void {
  if (id <= state.last) return;
  op.check(state.counter).set(COUNTER, new Deno.KvU64(BigInt(state.last)));
  const next = state.nextTaken;
  if (next !== null && (next === 0 || id < next)) op.set(NEXT_TAKEN, new Deno.KvU64(BigInt(id)));
}

/**
 * The id allocator: creations waiting in this process are committed together, one counter read
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
export function createIdAllocator(kv: Deno.Kv, options: AddressStoreOptions = {}) {
  const maxBatch = options.maxBatch ?? 200;
  const maxConflicts = options.maxConflicts ?? 50;
  const queue: Waiter[] = [];
  let draining = false;

  /** Answers keyed waiters whose key is stored already; returns the others. */
  async function settleStoredKeys(batch: Waiter[]): Promise<Waiter[]> {
    const keyed = batch.filter((w) => w.key !== undefined);
    if (keyed.length === 0) return batch;
    const settled = new Set<Waiter>();
    for (let i = 0; i < keyed.length; i += 10) {
      const chunk = keyed.slice(i, i + 10);
      const entries = await withKvRetry(() =>
        kv.getMany<IdempotencyRecord[]>(chunk.map((w) => idempotencyKey(w.owner, w.key!)))
      );
      entries.forEach((entry, j) => {
        if (entry.value === null) return;
        const w = chunk[j]!;
        settled.add(w);
        if (sameInput(entry.value.address, w.input)) {
          w.resolve({
            address: entry.value.address,
            versionstamp: entry.versionstamp,
            replayed: true,
          });
        } else w.reject(keyReused());
      });
    }
    return settled.size === 0 ? batch : batch.filter((w) => !settled.has(w));
  }

  /** Commits a prefix of `batch`; returns the waiters left for the next round. */
  async function commitBatch(batch: Waiter[]): Promise<Waiter[]> {
    for (let conflicts = 0;; conflicts++) {
      const state = await readIdState(kv);
      batch = await settleStoredKeys(batch);
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
      const op = kv.atomic()
        .check(state.counter)
        .set(COUNTER, new Deno.KvU64(BigInt(next)));
      if (listed) {
        // The lowest taken id past the new counter; past a full page nothing is known.
        let after = 0;
        for (const id of taken) if (id > next && (after === 0 || id < after)) after = id;
        if (after === 0 && full) after = next + 1;
        if (after !== nextTaken) op.set(NEXT_TAKEN, new Deno.KvU64(BigInt(after)));
      }
      const addresses = ids.map((id, i) => {
        const w = batch[i]!;
        const address: Address = { id, ...w.input };
        const record: AddressRecord = { owner: w.owner, address };
        op.set(addressKey(id), record).set(ownerKey(w.owner, id), address);
        if (w.key !== undefined) {
          const key = idempotencyKey(w.owner, w.key);
          const kept: IdempotencyRecord = { address };
          op.check({ key, versionstamp: null }).set(key, kept, { expireIn: IDEMPOTENCY_TTL_MS });
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
    let mutations = 0, checks = 0, values = 0, keys = 0, n = 0;
    while (n < queue.length && n < maxBatch) {
      const cost = costOf(queue[n]!);
      if (
        n > 0 && (mutations + cost.mutations > MAX_MUTATIONS || checks + cost.checks > MAX_CHECKS ||
          values + cost.values > MAX_VALUE_BYTES || keys + cost.keys > MAX_KEY_BYTES)
      ) break;
      mutations += cost.mutations;
      checks += cost.checks;
      values += cost.values;
      keys += cost.keys;
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
        input: { name: input.name, city: input.city, postalCode: input.postalCode },
        key,
        resolve,
        reject,
      });
      if (!draining) void drain();
    });
  }

  return { allocate };
}
