import { type CacheStats, stringBytes } from "../lib/cache_bytes.ts";
import { createLru } from "./lru.ts";

/** Serialized results of variable-free operations, valid for one catalogue snapshot. */
export interface ResultCache {
  /** The cache key of a request, or undefined when its result must not be cached. */
  keyOf(
    params: { query: string; operationName: string | undefined; variables: object | undefined },
  ):
    | string
    | undefined;
  /** The encoded `{"data":…}` body for `key`, if it was computed against `snapshot`. */
  get(key: string, snapshot: unknown): string | undefined;
  /**
   * The key `keyOf` gave the parameters of a request body of exactly this text, when a result was
   * stored for it: the same text parses to the same parameters, so a repeated body skips parsing.
   */
  keyOfBody(text: string): string | undefined;
  /** Stores `body` for `key` and `snapshot`; `text`, the request body it answered, finds it too. */
  set(key: string, snapshot: unknown, body: string, text?: string): void;
  /** What the cache holds, by its own accounting. */
  readonly stats: CacheStats;
}

/** Bounds: entries, and the bytes all entries hold (keys and bodies). */
interface ResultCacheOptions {
  maxEntries?: number;
  maxBytes?: number;
}

// What an entry holds besides its key and body: the entry, its record, the body's buffer object.
const ENTRY_BYTES = 256;
// Request bodies remembered with their keys, and the longest remembered.
const BODY_ENTRIES = 64;
const MAX_BODY_CHARS = 2048;

/**
 * Holds results of operations whose root fields all read the catalogue alone (CATALOGUE_FIELDS in
 * graphql/schema.ts; routes.ts stores nothing else, never an address book field, which is per
 * caller): such a field is a pure function of the catalogue snapshot, and the catalogue is
 * read-only after start-up, so an operation without variables has exactly one result per
 * snapshot: the GraphQL counterpart of the REST route's pre-encoded JSON. Every entry therefore
 * needs what the books need (`books:read`), which both places that answer from it ask. Entries
 * remember the snapshot (the store's frozen array) they were computed from and are ignored once
 * the store returns a different one, so the cache can never serve a stale catalogue. Only
 * error-free results are kept (field errors carry a request id). Bounded by entries and bytes.
 */
export function createResultCache(options: ResultCacheOptions = {}): ResultCache {
  const cache = createLru<{ snapshot: unknown; body: string }>(
    options.maxEntries ?? 1000,
    options.maxBytes ?? 4 * 1024 * 1024,
  );
  function keyOf(
    { query, operationName, variables }: {
      query: string;
      operationName: string | undefined;
      variables: object | undefined;
    },
  ): string | undefined {
    if (variables !== undefined && Object.keys(variables).length > 0) return undefined;
    return operationName === undefined ? query : `${operationName}\u0000${query}`;
  }
  // Request bodies by text, each with its key: few (a client repeats a handful of documents),
  // short ones only, bounded apart from the results.
  const bodies = createLru<string>(BODY_ENTRIES, BODY_ENTRIES * MAX_BODY_CHARS);
  function get(key: string, snapshot: unknown): string | undefined {
    const entry = cache.get(key);
    return entry !== undefined && entry.snapshot === snapshot ? entry.body : undefined;
  }
  return {
    keyOf,
    get,
    keyOfBody: (text) => bodies.get(text),
    set(key, snapshot, body, text) {
      cache.set(key, { snapshot, body }, ENTRY_BYTES + stringBytes(body) + stringBytes(key));
      if (text !== undefined && text.length <= MAX_BODY_CHARS) {
        bodies.set(text, key, ENTRY_BYTES + stringBytes(text) + stringBytes(key));
      }
    },
    stats: {
      get entries() {
        return cache.size + bodies.size;
      },
      get bytes() {
        return cache.weight + bodies.weight;
      },
      maxBytes: cache.maxWeight + bodies.maxWeight,
    },
  };
}
