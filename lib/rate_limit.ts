import type { RateLimitConfig } from "./config.ts";

/** Most clients tracked at once; the least recently seen is forgotten beyond this. */
const DEFAULT_MAX_CLIENTS = 10_000;

/** The outcome of one request against its client's bucket. */
export interface RateDecision {
  allowed: boolean;
  /** Requests left in the bucket after this one. */
  remaining: number;
  /** Seconds until the bucket is full again (IETF `t` of `RateLimit`), at least 1 when not full. */
  resetSeconds: number;
  /** Seconds until one request is allowed again (for `Retry-After`); 0 when allowed. */
  retryAfter: number;
}

/** A token bucket per client key. */
export interface RateLimiter {
  take(key: string): RateDecision;
  /** `RateLimit-Policy` value, e.g. `"default";q=100;w=60`. */
  readonly policy: string;
  /** Clients currently tracked (for tests of the memory bound). */
  readonly size: number;
}

/**
 * Token buckets: each client may burst `limit` requests and regains `limit` per window,
 * continuously. Memory is bounded: at most `maxClients` buckets are kept, least recently used
 * first out (a Map keeps insertion order; a used bucket is moved to the end). A forgotten
 * client starts again with a full bucket, so a flood of new addresses can at worst give an
 * existing client a fresh bucket, never grow memory.
 */
export function createRateLimiter(
  config: RateLimitConfig,
  options: { maxClients?: number; now?: () => number } = {},
): RateLimiter {
  const { limit, windowSeconds } = config;
  const maxClients = options.maxClients ?? DEFAULT_MAX_CLIENTS;
  const now = options.now ?? (() => performance.now());
  const perMs = limit / (windowSeconds * 1000);
  const buckets = new Map<string, { tokens: number; at: number }>();

  // Whole seconds until `tokens` are regained; rounded to the millisecond first, so that float
  // error (1 / (1 / 3.6e6)) does not add a second.
  function secondsFor(tokens: number): number {
    return tokens <= 0 ? 0 : Math.ceil(Math.round(tokens / perMs) / 1000);
  }

  function take(key: string): RateDecision {
    const t = now();
    let bucket = buckets.get(key);
    if (bucket === undefined) {
      if (buckets.size >= maxClients) buckets.delete(buckets.keys().next().value!);
      bucket = { tokens: limit, at: t };
    } else {
      buckets.delete(key);
      bucket.tokens = Math.min(limit, bucket.tokens + (t - bucket.at) * perMs);
      bucket.at = t;
    }
    buckets.set(key, bucket);
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    const remaining = Math.floor(bucket.tokens);
    return {
      allowed,
      remaining,
      resetSeconds: secondsFor(limit - bucket.tokens),
      retryAfter: allowed ? 0 : Math.max(1, secondsFor(1 - bucket.tokens)),
    };
  }

  return {
    take,
    policy: `"default";q=${limit};w=${windowSeconds}`,
    get size() {
      return buckets.size;
    },
  };
}
