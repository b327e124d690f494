import type { RateLimitConfig } from "../lib/config.ts";

/** Most clients tracked at once; the least recently seen is forgotten beyond this. */
const DEFAULT_MAX_CLIENTS = 10_000;

/** The outcome of one request against its client's bucket. */
interface RateDecision {
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
  /**
   * Takes `calls` (default 1) from the bucket of `key`, all or none: a request that makes several
   * calls is admitted only if the bucket holds all of them.
   */
  take(key: string, calls?: number): RateDecision;
  /** The key of a client known only by its network address (see `addressKey`). */
  addressKey(address: string): string;
  /** `RateLimit-Policy` value, e.g. `"default";q=100;w=60`. */
  readonly policy: string;
  /** Calls a full bucket holds. */
  readonly limit: number;
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

  function take(key: string, calls = 1): RateDecision {
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
    const allowed = bucket.tokens >= calls;
    if (allowed) bucket.tokens -= calls;
    const remaining = Math.floor(bucket.tokens);
    // More calls than the bucket ever holds wait for a full bucket (and are refused again).
    const needed = Math.min(calls, limit);
    return {
      allowed,
      remaining,
      resetSeconds: secondsFor(limit - bucket.tokens),
      retryAfter: allowed ? 0 : Math.max(1, secondsFor(needed - bucket.tokens)),
    };
  }

  return {
    take,
    addressKey,
    policy: `"default";q=${limit};w=${windowSeconds}`,
    limit,
    get size() {
      return buckets.size;
    },
  };
}

/**
 * The bucket key of a client known only by its network address: the address itself for IPv4,
 * the /64 prefix in expanded form for IPv6 (`ip:2001:0db8:0000:0000::/64`), since one host
 * usually holds a whole /64 and could otherwise take a bucket per address. An IPv4-mapped address
 * (`::ffff:1.2.3.4`, what a dual-stack listener reports for an IPv4 client) is its IPv4 address.
 * Anything else is kept as it is.
 */
export function addressKey(address: string): string {
  if (!address.includes(":")) return `ip:${address}`;
  const hextets = parseIpv6(address.replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, ""));
  if (hextets === undefined) return `ip:${address}`;
  if (hextets[5] === 0xffff && hextets.slice(0, 5).every((h) => h === 0)) {
    const [high, low] = [hextets[6]!, hextets[7]!];
    return `ip:${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  }
  const prefix = hextets.slice(0, 4).map((h) => h.toString(16).padStart(4, "0"));
  return `ip:${prefix.join(":")}::/64`;
}

const HEXTET = /^[0-9a-fA-F]{1,4}$/;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** The eight 16-bit groups of an IPv6 address (RFC 4291 text forms), or undefined. */
function parseIpv6(text: string): number[] | undefined {
  let groups = text;
  const tail: number[] = [];
  if (text.includes(".")) {
    // The last 32 bits written as an IPv4 address.
    const at = text.lastIndexOf(":");
    const octets = IPV4.exec(text.slice(at + 1))?.slice(1).map(Number);
    if (octets === undefined || octets.some((o) => o > 255)) return undefined;
    tail.push((octets[0]! << 8) | octets[1]!, (octets[2]! << 8) | octets[3]!);
    groups = text.slice(0, at + 1);
    if (!groups.endsWith("::")) groups = groups.slice(0, -1);
  }
  const halves = groups.split("::");
  if (halves.length > 2) return undefined;
  const [left, right] = halves.map((half) => half === "" ? [] : half.split(":"));
  const written = [...left!, ...(right ?? [])];
  if (!written.every((g) => HEXTET.test(g))) return undefined;
  const missing = 8 - written.length - tail.length;
  if (right === undefined ? missing !== 0 : missing < 1) return undefined;
  return [
    ...left!.map((g) => parseInt(g, 16)),
    ...new Array<number>(right === undefined ? 0 : missing).fill(0),
    ...(right ?? []).map((g) => parseInt(g, 16)),
    ...tail,
  ];
}
