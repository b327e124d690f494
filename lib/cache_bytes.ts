/** How caches account for the memory they hold, so that each is bounded by bytes. */

/** What a bounded cache holds, by its own accounting. */
export interface CacheStats {
  /** Entries held. */
  readonly entries: number;
  /** Estimated bytes held: keys, values and a fixed cost per entry. */
  readonly bytes: number;
  /** The bound `bytes` stays within. */
  readonly maxBytes: number;
}

/**
 * Bytes V8 keeps for a string's characters: one per character when all are below U+0100, else
 * two. An estimate: the string's header and the parent of a sliced string are left out, which
 * the fixed cost per entry of each cache covers.
 */
export function stringBytes(text: string): number {
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) > 0xff) return text.length * 2;
  }
  return text.length;
}
