/**
 * Deno KV limits one atomic operation to 100 checks, 1000 mutations, 800 KiB of mutation data
 * and 80 KiB of keys. Batches of migrations, imports and erasures grow by whole items (an
 * address with its index entry and count) while the next one fits; the bounds leave room for
 * the few checks and mutations every batch adds (layout, progress, counter, counts).
 */
export interface AtomicBudget {
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

const LIMITS = { checks: 90, mutations: 950, keyBytes: 70_000, valueBytes: 700_000 };

/** A fresh budget, optionally with a smaller bound on checks (items per batch). */
export function atomicBudget(maxChecks = LIMITS.checks): AtomicBudget {
  let checks = 0, mutations = 0, keyBytes = 0, valueBytes = 0;
  return {
    take(cost) {
      const c = checks + (cost.checks ?? 0);
      const m = mutations + (cost.mutations ?? 0);
      const k = keyBytes + (cost.keyBytes ?? 0);
      const v = valueBytes + (cost.valueBytes ?? 0);
      if (c > Math.min(maxChecks, LIMITS.checks) || m > LIMITS.mutations) return false;
      if (k > LIMITS.keyBytes || v > LIMITS.valueBytes) return false;
      checks = c;
      mutations = m;
      keyBytes = k;
      valueBytes = v;
      return true;
    },
  };
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
