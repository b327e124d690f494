import type { CacheStats } from "../lib/cache_bytes.ts";

/** A bounded map that evicts entries not used recently. */
export interface Lru<V> {
  get(key: string): V | undefined;
  /** Stores a value; `weight` counts against `maxWeight` (the bytes the entry holds). */
  set(key: string, value: V, weight: number): void;
  readonly size: number;
  readonly weight: number;
  readonly maxWeight: number;
}

/** An LRU whose weights are bytes, as CacheStats. */
export function byteStats(lru: Lru<unknown>): CacheStats {
  return {
    get entries() {
      return lru.size;
    },
    get bytes() {
      return lru.weight;
    },
    maxBytes: lru.maxWeight,
  };
}

/**
 * Creates an approximate LRU (the CLOCK, or second-chance, policy) bounded both by entry count
 * and by total weight, so neither many small entries nor a few heavy ones can grow memory
 * without bound. A hit only sets a flag, keeping the hot path free of map writes; eviction walks
 * the Map from its oldest entry, gives a flagged entry a second chance by moving it to the back
 * with the flag cleared, and drops the first unflagged one.
 */
export function createLru<V>(maxEntries: number, maxWeight: number): Lru<V> {
  const entries = new Map<string, { value: V; weight: number; used: boolean }>();
  let total = 0;

  function get(key: string): V | undefined {
    const entry = entries.get(key);
    if (entry === undefined) return undefined;
    entry.used = true;
    return entry.value;
  }

  function set(key: string, value: V, weight: number): void {
    if (weight > maxWeight || maxEntries < 1) return;
    const old = entries.get(key);
    if (old !== undefined) {
      total -= old.weight;
      entries.delete(key);
    }
    entries.set(key, { value, weight, used: false });
    total += weight;
    // Terminates: a moved entry is unflagged, so the second time round it is dropped.
    for (const [oldest, entry] of entries) {
      if (entries.size <= maxEntries && total <= maxWeight) break;
      entries.delete(oldest);
      if (entry.used && oldest !== key) {
        entry.used = false;
        entries.set(oldest, entry);
      } else {
        total -= entry.weight;
      }
    }
  }

  return {
    get,
    set,
    get size() {
      return entries.size;
    },
    get weight() {
      return total;
    },
    maxWeight,
  };
}
