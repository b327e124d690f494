import { AppError } from "../../lib/errors.ts";
import { MAX_TIMER_MS } from "../../lib/timers.ts";
import { pageTokens } from "./page_tokens.ts";
import { withKvRetry } from "../kv/retry.ts";
import { getAll } from "../kv/read.ts";
import {
  type Change,
  changeKey,
  type ChangeLog,
  changePrefix,
  type ChangeRecord,
  CLOCK_KEY,
  seqKey,
  seqOf,
} from "./change_log.ts";

/**
 * Live updates of an owner's address book (docs/storage.md, "The change log"): a stream of the
 * owner's changes in commit order, from a resume token or from the moment it opened. Every door
 * (REST's Server-Sent Events, gRPC's server stream, GraphQL's subscription) reads it.
 */

/** A change as a stream delivers it, with the token that resumes after it. */
export interface AddressChange extends Change {
  token: string;
}

/** Seals change numbers into resume tokens bound to an owner, and opens them. */
export interface FeedTokens {
  seal(owner: string, n: number): Promise<string>;
  /** The number a token of `owner` holds; else AppError `invalid-parameter`. */
  open(owner: string, token: string): Promise<number>;
}

/**
 * Resume tokens: the change number sealed with the KV's page-token key (page_tokens.ts), bound to
 * the owner and to the feed, so a page token is not one, nor another owner's, nor another KV's.
 */
export function feedTokens(kv: Deno.Kv): FeedTokens {
  const tokens = pageTokens(kv, {
    listing: "addresses.v1/events",
    first: 0,
    invalid: invalidToken,
  });
  return { seal: tokens.after, open: tokens.position };
}

function invalidToken(): AppError {
  return new AppError("invalid-parameter", "The resume token is not one this server issued.");
}

/** A caller's open stream of changes. */
export interface FeedStream extends AsyncIterableIterator<AddressChange> {
  /** The token of the last change delivered, or of where the stream opened. */
  readonly position: string;
  /** Ends the stream (the next `next()` is done); what is delivered stays delivered. */
  close(): void;
}

/** The feed of every owner. */
export interface AddressFeed {
  /**
   * Opens a stream of `owner`'s changes after `after` (a token), or after the last change
   * committed now. Refuses with AppError: `rate-limited` past the stream limits,
   * `events-expired` when the changes after `after` are no longer kept, `invalid-parameter` for
   * a token this KV did not make for this owner.
   */
  open(owner: string, options: OpenOptions): Promise<FeedStream>;
  /** Ends every stream (shutdown); each ends after the change it is delivering. */
  closeAll(): void;
  /** Streams open now. */
  readonly size: number;
}

interface OpenOptions {
  after?: string | undefined;
  /** Who holds the stream, for the per-caller limit (the owner, or the client's address). */
  caller: string;
  /** Ends the stream when aborted (the client went away). */
  signal?: AbortSignal;
  /** Ends the stream then (ms since the epoch): when the caller's token expires. */
  until?: number | undefined;
}

/** How the feed reads and bounds. */
export interface FeedOptions {
  log: ChangeLog;
  tokens: FeedTokens;
  retentionMs: number;
  /** `EVENTS_MAX_STREAMS`: streams open at once in this process. */
  maxStreams: number;
  /** `EVENTS_MAX_STREAMS_PER_CALLER`. */
  maxStreamsPerCaller: number;
  /**
   * How often the change clock is read for commits of other processes (a KV file, where
   * `watch` does not see them); 0: never (watch sees every commit: Deno Deploy, KV Connect).
   */
  pollMs: number;
  now?: () => number;
}

// Changes read from KV at a time.
const BATCH = 64;
// Recent changes kept per owner with open streams.
const RECENT = 256;

/** One open stream's state, as the feed's wake-ups see it. */
interface Reader {
  owner: string;
  wake(): void;
}

export function openAddressFeed(kv: Deno.Kv, options: FeedOptions): AddressFeed {
  const now = options.now ?? Date.now;
  const readers = new Map<string, Set<Reader>>(); // by owner
  const perCaller = new Map<string, number>();
  let open = 0;

  function wakeOwners(owners: Iterable<string>) {
    for (const owner of owners) for (const r of readers.get(owner) ?? []) r.wake();
  }

  // The changes this process committed lately, of owners with open streams: a stream at the head
  // takes them from here, so one change reaches any number of streams without a KV read each,
  // and each change is made (its token sealed) once for all of them.
  const recent = new Map<string, Map<number, { record: ChangeRecord; change?: AddressChange }>>();
  options.log.onAppend((appended) => {
    for (const [owner, changes] of appended) {
      const kept = recent.get(owner);
      if (kept === undefined) continue;
      for (const { n, record } of changes) kept.set(n, { record });
      // Bounded: a stream further behind reads KV.
      for (const n of kept.keys()) {
        if (kept.size <= RECENT) break;
        kept.delete(n);
      }
    }
    wakeOwners(appended.keys());
  });

  /** `owner`'s change n as streams deliver it, made once. */
  async function changeOf(owner: string, n: number, record: ChangeRecord): Promise<AddressChange> {
    const { v: _, at: _at, ...change } = record;
    return { ...change, token: await options.tokens.seal(owner, n) };
  }

  /** Up to BATCH changes of `owner` after `position` from the recent ones; none if not there. */
  async function fromRecent(owner: string, position: number): Promise<AddressChange[]> {
    const kept = recent.get(owner);
    const out: AddressChange[] = [];
    for (let n = position + 1; kept !== undefined && out.length < BATCH; n++) {
      const entry = kept.get(n);
      if (entry === undefined) break;
      entry.change ??= await changeOf(owner, n, entry.record);
      out.push(entry.change);
    }
    return out;
  }

  // Commits of other processes: `watch` of each owner's sequence entry, and where watch does
  // not see them (a KV file), a poll of the one change clock, then of the owners' entries.
  const watches = new Map<string, ReadableStreamDefaultReader<Deno.KvEntryMaybe<unknown>[]>>();
  function watchOwner(owner: string) {
    const reader = kv.watch([seqKey(owner)]).getReader();
    watches.set(owner, reader);
    void (async () => {
      try {
        for (;;) {
          const { done } = await reader.read();
          if (done) return;
          wakeOwners([owner]);
        }
      } catch {
        // The KV closed: the poll (or nothing) is left.
      }
    })();
  }

  let clock: bigint | undefined;
  let polling: ReturnType<typeof setInterval> | undefined;
  const seen = new Map<string, number>();
  async function poll() {
    try {
      const entry = await kv.get<Deno.KvU64>(CLOCK_KEY);
      const value = entry.value?.value ?? 0n;
      if (clock !== undefined && value === clock) return;
      clock = value;
      const owners = [...readers.keys()];
      const entries = await getAll<Deno.KvU64>(kv, owners.map(seqKey));
      const moved = owners.filter((owner, i) => {
        const n = seqOf(entries[i]!);
        const before = seen.get(owner);
        seen.set(owner, n);
        // First seen: woken anyway (a stream reads from its own position; a spare read is cheap).
        return n !== before;
      });
      wakeOwners(moved);
    } catch {
      // A failed poll is tried again at the next tick.
    }
  }
  function startPolling() {
    if (options.pollMs > 0 && polling === undefined) {
      polling = setInterval(poll, options.pollMs);
      Deno.unrefTimer(polling);
    }
  }
  function stopPolling() {
    if (polling !== undefined && open === 0) {
      clearInterval(polling);
      polling = undefined;
      clock = undefined;
      seen.clear();
    }
  }

  function add(r: Reader, caller: string) {
    let set = readers.get(r.owner);
    if (set === undefined) {
      set = new Set();
      readers.set(r.owner, set);
      recent.set(r.owner, new Map());
      watchOwner(r.owner);
    }
    set.add(r);
    perCaller.set(caller, (perCaller.get(caller) ?? 0) + 1);
    open++;
    startPolling();
  }

  function remove(r: Reader, caller: string) {
    const set = readers.get(r.owner);
    if (set === undefined || !set.delete(r)) return;
    if (set.size === 0) {
      readers.delete(r.owner);
      recent.delete(r.owner);
      seen.delete(r.owner);
      void watches.get(r.owner)?.cancel().catch(() => {});
      watches.delete(r.owner);
    }
    const left = (perCaller.get(caller) ?? 1) - 1;
    if (left === 0) perCaller.delete(caller);
    else perCaller.set(caller, left);
    open--;
    stopPolling();
  }

  function expired(detail: string): AppError {
    return new AppError("events-expired", detail);
  }

  /** Where a stream starts: after the token's change, or after the owner's last change now. */
  async function startOf(owner: string, after: string | undefined): Promise<number> {
    const head = seqOf(await withKvRetry(() => kv.get<Deno.KvU64>(seqKey(owner))));
    if (after === undefined) return head;
    const n = await options.tokens.open(owner, after);
    // A token this KV sealed for this owner is never ahead of the owner's log.
    if (n > head) throw invalidToken();
    if (n === head) return n;
    const next = await withKvRetry(() => kv.get<ChangeRecord>(changeKey(owner, n + 1)));
    if (next.value === null || next.value.at < now() - options.retentionMs) {
      throw expired(
        `The changes after this token are no longer kept (they are kept for ` +
          `${Math.round(options.retentionMs / 3_600_000 * 10) / 10} h); read the addresses again ` +
          "and open a stream without a token.",
      );
    }
    return n;
  }

  const streams = new Set<FeedStream>();

  return {
    get size() {
      return open;
    },

    async open(owner, { after, caller, signal, until }) {
      if (open >= options.maxStreams) {
        throw new AppError("rate-limited", "Too many streams are open on this server.", {
          retryAfter: 5,
        });
      }
      if ((perCaller.get(caller) ?? 0) >= options.maxStreamsPerCaller) {
        throw new AppError(
          "rate-limited",
          `At most ${options.maxStreamsPerCaller} streams may be open at once per caller.`,
          { retryAfter: 5 },
        );
      }
      let buffered: AddressChange[] = [];
      let ended = false;
      let wakeUp: (() => void) | undefined;
      let woken = false;
      const reader: Reader = {
        owner,
        wake() {
          woken = true;
          wakeUp?.();
        },
      };
      // The place is taken before anything is awaited, so streams opening together cannot pass
      // the limits between the check and the count.
      add(reader, caller);
      let position: number;
      let token: string;
      try {
        position = await startOf(owner, after);
        token = after ?? await options.tokens.seal(owner, position);
      } catch (error) {
        remove(reader, caller);
        throw error;
      }
      // A stream due to end further away than a timer can wait is not timed.
      const left = until === undefined ? Infinity : until - now();
      const timer = left < MAX_TIMER_MS ? setTimeout(() => end(), Math.max(0, left)) : undefined;
      const end = () => {
        if (ended) return;
        ended = true;
        clearTimeout(timer);
        remove(reader, caller);
        streams.delete(stream);
        wakeUp?.();
      };
      signal?.addEventListener("abort", end, { once: true });

      async function fill(): Promise<void> {
        const cached = await fromRecent(owner, position);
        if (cached.length > 0) {
          buffered = cached;
          return;
        }
        const entries: Deno.KvEntry<ChangeRecord>[] = [];
        await withKvRetry(async () => {
          entries.length = 0;
          const selector = { prefix: changePrefix(owner), start: changeKey(owner, position + 1) };
          for await (const e of kv.list<ChangeRecord>(selector, { limit: BATCH })) entries.push(e);
        });
        let n = position;
        const fresh: AddressChange[] = [];
        for (const e of entries) {
          const at = e.key[2] as number;
          if (at !== n + 1) {
            throw expired("Changes after this stream's position are no longer kept.");
          }
          n = at;
          fresh.push(await changeOf(owner, n, e.value));
        }
        buffered = fresh;
      }

      const stream: FeedStream = {
        get position() {
          return token;
        },
        close: end,
        [Symbol.asyncIterator]() {
          return stream;
        },
        async next(): Promise<IteratorResult<AddressChange>> {
          for (;;) {
            if (ended) return { done: true, value: undefined };
            const change = buffered.shift();
            if (change !== undefined) {
              position++;
              token = change.token;
              return { done: false, value: change };
            }
            woken = false;
            try {
              await fill();
            } catch (error) {
              end();
              throw error;
            }
            if (buffered.length > 0 || ended) continue;
            // Nothing new: wait for a wake-up unless one came while reading.
            if (!woken) await new Promise<void>((resolve) => (wakeUp = resolve));
            wakeUp = undefined;
          }
        },
        return(): Promise<IteratorResult<AddressChange>> {
          end();
          return Promise.resolve({ done: true, value: undefined });
        },
      };
      streams.add(stream);
      if (signal?.aborted) end();
      return stream;
    },

    closeAll() {
      for (const stream of [...streams]) stream.close();
    },
  };
}
