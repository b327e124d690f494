import type { CacheStats } from "../lib/cache_bytes.ts";

/** Verified tokens, each remembered until its deadline; bounded by entries and by bytes. */
export interface TokenCache<V> extends CacheStats {
  /** The value stored for `token`, unless its deadline has passed (then it is dropped). */
  get(token: string, now: number): V | undefined;
  /** Remembers `value` until `until` (ms since the epoch); `bytes` is what the entry holds. */
  set(token: string, value: V, until: number, bytes: number): void;
}

/** Bounds of a token cache. */
interface TokenCacheOptions {
  maxEntries?: number;
  maxBytes?: number;
}

/**
 * A token (up to 8 KiB) outweighs its identity, so counting entries alone would let large tokens
 * grow the cache to tens of MiB; it is bounded by the bytes it holds too. Oldest first out (a Map
 * keeps insertion order): entries expire within a minute anyway, so recency buys little here.
 */
export function createTokenCache<V>(options: TokenCacheOptions = {}): TokenCache<V> {
  const maxEntries = options.maxEntries ?? 10_000;
  const maxBytes = options.maxBytes ?? 4 * 1024 * 1024;
  const entries = new Map<string, { value: V; until: number; bytes: number }>();
  let total = 0;

  function drop(token: string, bytes: number): void {
    entries.delete(token);
    total -= bytes;
  }

  return {
    get(token, now) {
      const hit = entries.get(token);
      if (hit === undefined) return undefined;
      if (hit.until > now) return hit.value;
      drop(token, hit.bytes);
      return undefined;
    },
    set(token, value, until, bytes) {
      if (bytes > maxBytes) return;
      const old = entries.get(token);
      if (old !== undefined) drop(token, old.bytes);
      for (const [oldest, entry] of entries) {
        if (entries.size < maxEntries && total + bytes <= maxBytes) break;
        drop(oldest, entry.bytes);
      }
      entries.set(token, { value, until, bytes });
      total += bytes;
    },
    get entries() {
      return entries.size;
    },
    get bytes() {
      return total;
    },
    maxBytes,
  };
}
