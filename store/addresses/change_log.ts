import type { Address } from "../../lib/address.ts";
import { atomicBudget, type Cost, keySize, valueSize } from "../kv/atomic_budget.ts";
import { withKvRetry } from "../kv/retry.ts";
import { getAll } from "../kv/read.ts";

/**
 * The address book's change log: every committed write of an address appends, in its own atomic
 * operation, one change per address it wrote to its owner's log (docs/storage.md, "The change
 * log"). So a write and its changes commit together or not at all, and an owner's changes are
 * numbered in commit order.
 *
 * - `["feed_seq", owner]` → `KvU64`: the number of the owner's last change (absent: none yet).
 * - `["feed_events", owner, n]` → `ChangeRecord`: change n, kept `retentionMs` (KV expires it).
 * - `["feed_clock"]` → `KvU64`: summed in every commit that appends (never checked, so it never
 *   makes two commits conflict): another process polls it to learn that someone wrote.
 */

/** What happened to an address. */
export type ChangeType = "created" | "replaced" | "updated" | "deleted";

/** One change as a write describes it. */
export interface Change {
  type: ChangeType;
  id: number;
  /** The address as stored, with its ETag; none for `deleted`. */
  address?: Address;
  etag?: string;
}

/** A change as the log keeps it. */
export interface ChangeRecord extends Change {
  v: 1;
  /** When it was committed (ms since the epoch, the writer's clock): retention is judged by it. */
  at: number;
}

export const CLOCK_KEY: Deno.KvKey = ["feed_clock"];

/** `EVENTS_RETENTION`'s default: a day. */
export const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;

/** The key of an owner's last change number. */
export function seqKey(owner: string): Deno.KvKey {
  return ["feed_seq", owner];
}

/** The key of change `n` of an owner. */
export function changeKey(owner: string, n: number): Deno.KvKey {
  return ["feed_events", owner, n];
}

/** Prefix of an owner's changes. */
export function changePrefix(owner: string): Deno.KvKey {
  return ["feed_events", owner];
}

/** The number an owner's sequence entry holds (0: none yet). */
export function seqOf(entry: Deno.KvEntryMaybe<Deno.KvU64>): number {
  return entry.value === null ? 0 : Number(entry.value.value);
}

/** A change as committed: its number in its owner's log, and its record. */
export interface Appended {
  n: number;
  record: ChangeRecord;
}

/** A write made ready to commit: its own checks and mutations, and the changes it makes. */
export interface PreparedWrite {
  /** The changes, each with the owner whose log it goes to, in the order they happen. */
  changes: readonly { owner: string; change: Change }[];
  /**
   * The keys it checks and writes, as strings: two writes that share one never share a commit
   * (within one atomic operation both would pass their checks and the second would overwrite).
   */
  claims: readonly string[];
  /** What its own checks and mutations add to an operation (KV's limits). */
  cost: Cost;
  /** Adds its checks and mutations. */
  apply(op: Deno.AtomicOperation): void;
}

/** How a prepared write ended: committed at `versionstamp`, or refused by a check. */
export type WriteOutcome = { ok: true; versionstamp: string } | { ok: false };

/** Commits prepared writes with their changes. */
export interface ChangeLog {
  /**
   * Commits `write` with its changes appended to its owners' logs, possibly in one atomic
   * operation with other writes waiting at the same time. `{ok: false}` when a check failed
   * (the write's own, or an owner's log moved on in another process): read again and retry.
   */
  commit(write: PreparedWrite): Promise<WriteOutcome>;
  /** Called after each commit of this process with the changes it appended, by owner. */
  onAppend(listener: (appended: ReadonlyMap<string, readonly Appended[]>) => void): () => void;
}

/** How the change log writes. */
export interface ChangeLogOptions {
  /** How long changes are kept (`EVENTS_RETENTION`). */
  retentionMs: number;
  /** Adds what every write of the store checks (the layout guard). */
  guard: (op: Deno.AtomicOperation) => Deno.AtomicOperation;
  /** The time a change is stamped with (tests). */
  now?: () => number;
}

// What the log adds per owner (its sequence's check and write) and per change (its record).
const PER_OWNER: Cost = { checks: 1, mutations: 1, keyBytes: 600, valueBytes: 32 };
// Besides the writes: the layout guard's check, the clock's sum.
const RESERVE = { checks: 3, mutations: 2 };

interface Waiting {
  write: PreparedWrite;
  resolve(outcome: WriteOutcome): void;
  reject(error: unknown): void;
}

/**
 * The change log over `kv`, one per process: every write of the store commits through it.
 *
 * Why one committer: every write of an owner checks that owner's sequence entry, so two writes of
 * one owner committed side by side would conflict and retry. Here the writes waiting at the same
 * time are committed together, one atomic operation at a time (as the create batch always did
 * for creations), each owner's entry checked once with the number it had after this process's
 * last commit, so writes of this process never conflict with each other on it. A write of
 * another process moves an entry on: the batch fails, the entries are read again, and each write
 * is retried by its caller from its reads.
 */
export function openChangeLog(kv: Deno.Kv, options: ChangeLogOptions): ChangeLog {
  const now = options.now ?? Date.now;
  const queue: Waiting[] = [];
  // The sequence entries as this process last committed or read them.
  const heads = new Map<string, Deno.KvEntryMaybe<Deno.KvU64>>();
  const listeners = new Set<(appended: ReadonlyMap<string, readonly Appended[]>) => void>();
  let draining = false;

  function changeCost(owner: string, change: Change): Cost {
    return {
      mutations: 1,
      keyBytes: keySize(changeKey(owner, 0)),
      valueBytes: change.address === undefined ? 64 : valueSize(change) + 32,
    };
  }

  /** The writes at the head of the queue that fit one operation and claim no key twice. */
  function takeBatch(): Waiting[] {
    // Alone, any write fits (its caller sized it so): nothing to size.
    if (queue.length === 1) return queue.splice(0, 1);
    const budget = atomicBudget(RESERVE);
    const owners = new Set<string>();
    const claimed = new Set<string>();
    const batch: Waiting[] = [];
    for (let i = 0; i < queue.length;) {
      const w = queue[i]!;
      if (w.write.claims.some((c) => claimed.has(c))) {
        i++; // waits for the next batch
        continue;
      }
      let fits = budget.take(w.write.cost);
      for (const { owner, change } of w.write.changes) {
        if (!owners.has(owner)) fits = budget.take(PER_OWNER) && fits;
        fits = budget.take(changeCost(owner, change)) && fits;
      }
      // Alone, any write fits (its caller sized it so).
      if (!fits && batch.length > 0) break;
      queue.splice(i, 1);
      batch.push(w);
      for (const c of w.write.claims) claimed.add(c);
      for (const { owner } of w.write.changes) owners.add(owner);
    }
    return batch;
  }

  async function readHeads(owners: string[]): Promise<void> {
    const missing = owners.filter((o) => !heads.has(o));
    if (missing.length === 0) return;
    const entries = await getAll<Deno.KvU64>(kv, missing.map(seqKey));
    missing.forEach((owner, i) => heads.set(owner, entries[i]!));
    // Bounded: the owners written lately; an evicted one is read again when next written.
    while (heads.size > 10_000) heads.delete(heads.keys().next().value!);
  }

  async function commitBatch(batch: Waiting[]): Promise<void> {
    const owners = [...new Set(batch.flatMap((w) => w.write.changes.map((c) => c.owner)))];
    await readHeads(owners);
    const op = options.guard(kv.atomic());
    for (const w of batch) w.write.apply(op);
    const at = now();
    const next = new Map<string, number>();
    const appended = new Map<string, Appended[]>();
    for (const owner of owners) {
      next.set(owner, seqOf(heads.get(owner)!));
      appended.set(owner, []);
    }
    for (const w of batch) {
      for (const { owner, change } of w.write.changes) {
        const n = next.get(owner)! + 1;
        next.set(owner, n);
        const record: ChangeRecord = { v: 1, ...change, at };
        op.set(changeKey(owner, n), record, { expireIn: options.retentionMs });
        appended.get(owner)!.push({ n, record });
      }
    }
    for (const owner of owners) {
      op.check(heads.get(owner)!).set(seqKey(owner), new Deno.KvU64(BigInt(next.get(owner)!)));
    }
    if (owners.length > 0) op.sum(CLOCK_KEY, 1n);
    const result = await withKvRetry(() => op.commit());
    if (!result.ok) {
      // Another process appended, or a write's own check failed: read the heads again.
      for (const owner of owners) heads.delete(owner);
      for (const w of batch) w.resolve({ ok: false });
      return;
    }
    for (const owner of owners) {
      heads.set(owner, {
        key: seqKey(owner),
        value: new Deno.KvU64(BigInt(next.get(owner)!)),
        versionstamp: result.versionstamp,
      });
    }
    for (const w of batch) w.resolve({ ok: true, versionstamp: result.versionstamp });
    if (owners.length > 0) { for (const listener of listeners) listener(appended); }
  }

  async function drain(): Promise<void> {
    draining = true;
    try {
      while (queue.length > 0) {
        const batch = takeBatch();
        try {
          await commitBatch(batch);
        } catch (error) {
          for (const owner of new Set(batch.flatMap((w) => w.write.changes.map((c) => c.owner)))) {
            heads.delete(owner);
          }
          for (const w of batch) w.reject(error);
        }
      }
    } finally {
      draining = false;
    }
  }

  return {
    commit(write) {
      return new Promise((resolve, reject) => {
        queue.push({ write, resolve, reject });
        if (!draining) void drain();
      });
    },
    onAppend(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
