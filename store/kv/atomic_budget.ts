/**
 * Deno KV's limits on one atomic operation, and the one budget every batch is sized by (the create
 * batch, books seeding, imports, migrations, erasures and sweeps). A batch grows by whole items
 * (an address with its index entry and count, a book, a key record) while the next one fits.
 */
const KV_ATOMIC_LIMITS = {
  checks: 100,
  mutations: 1000,
  keyBytes: 80 * 1024,
  valueBytes: 800 * 1024,
} as const;

/**
 * What a batch may fill of the bytes: sizes are upper bounds computed from UTF-16 lengths
 * (`keySize`, `valueSize`), not KV's own encoding, so about an eighth of each limit stays free.
 */
const BYTES = { keyBytes: 70_000, valueBytes: 700_000 } as const;

/** Checks and mutations a batch keeps free for what it adds besides its items. */
interface Reserve {
  checks: number;
  mutations: number;
}

/**
 * The default reserve: room for the few checks and writes a batch's runner adds (the layout, a
 * migration's progress, the id counter, owners' counts), whatever they are.
 */
const DEFAULT_RESERVE: Reserve = { checks: 10, mutations: 50 };

/** Tracks what a batch has taken of one atomic operation. */
interface AtomicBudget {
  /** Takes an item's cost when it fits (true), or leaves the budget unchanged (false). */
  take(cost: Cost): boolean;
}

/** What one item adds to an atomic operation. */
export interface Cost {
  checks?: number;
  mutations?: number;
  /** Bytes of every key it checks or writes. */
  keyBytes?: number;
  /** Bytes of the values it writes. */
  valueBytes?: number;
}

/** A fresh budget: KV's limits less `reserve` (the default unless the batch counts its own). */
export function atomicBudget(reserve: Reserve = DEFAULT_RESERVE): AtomicBudget {
  const max = {
    checks: KV_ATOMIC_LIMITS.checks - reserve.checks,
    mutations: KV_ATOMIC_LIMITS.mutations - reserve.mutations,
  };
  let checks = 0, mutations = 0, keyBytes = 0, valueBytes = 0;
  return {
    take(cost) {
      const c = checks + (cost.checks ?? 0);
      const m = mutations + (cost.mutations ?? 0);
      const k = keyBytes + (cost.keyBytes ?? 0);
      const v = valueBytes + (cost.valueBytes ?? 0);
      if (c > max.checks || m > max.mutations) return false;
      if (k > BYTES.keyBytes || v > BYTES.valueBytes) return false;
      checks = c;
      mutations = m;
      keyBytes = k;
      valueBytes = v;
      return true;
    },
  };
}

/**
 * Splits `items` into runs, in order, that each fit one budget (a run holds at least one item:
 * alone, any item is within KV's limits).
 */
export function* fittingRuns<T>(
  items: readonly T[],
  cost: (item: T) => Cost,
  reserve: Reserve = DEFAULT_RESERVE,
): Generator<T[], void, undefined> {
  let run: T[] = [];
  let budget = atomicBudget(reserve);
  for (const item of items) {
    const itemCost = cost(item);
    if (!budget.take(itemCost) && run.length > 0) {
      yield run;
      run = [];
      budget = atomicBudget(reserve);
      budget.take(itemCost);
    }
    run.push(item);
  }
  if (run.length > 0) yield run;
}

/** An upper bound of a key's encoded size (UTF-16 units × 3 ≥ UTF-8 bytes). */
export function keySize(key: Deno.KvKey): number {
  let size = 0;
  for (const part of key) size += typeof part === "string" ? part.length * 3 + 2 : 10;
  return size;
}

/** An upper bound of a JSON-like value's encoded size. */
export function valueSize(value: unknown): number {
  return JSON.stringify(value).length * 3 + 16;
}
