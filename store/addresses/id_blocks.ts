import { AppError } from "../../lib/errors.ts";
import { backoffDelay, DEFAULT_RETRY, sleep, withKvRetry } from "../kv/retry.ts";
import type { LayoutGuard } from "../layout/layout.ts";
import { moveCounter, readCounter } from "./id_counter.ts";
import { MAX_ID } from "./keys.ts";

/**
 * The ids one process hands out to POST: blocks reserved from the id counter (one atomic operation
 * that checks the counter and moves it past the block), then handed out here without touching the
 * counter. Several processes on one KV (`deno serve --parallel`, several servers, Deploy's
 * regions) thus meet at the counter once per block instead of once per batch of creations.
 *
 * An id is unique because a block is one process's alone (the counter moved past it before any of
 * its ids is used) and each creation is committed with a check that its record is absent (an
 * import may write a restored address into a block; the batch then drops that id). An id is
 * never reused because the counter never goes back: the rest of a block a process did not use
 * (stopped, killed) stays unused, a gap in the ids.
 *
 * The block size follows demand: it doubles when the previous block lasted under a second and
 * halves when it lasted over ten, between 1 and MAX_BLOCK. An idle server reserves what it needs
 * (one id for one creation: restarting it leaves no gap), a busy one reserves rarely, and a kill
 * -9 loses at most MAX_BLOCK ids.
 */

/** Largest block: bounds the ids a killed process leaves unused. */
export const MAX_BLOCK = 1024;

const GROW_BELOW_MS = 1_000;
const SHRINK_ABOVE_MS = 10_000;

/** A process's reserved ids. */
interface IdBlocks {
  /**
   * The lowest `n` ids reserved and not yet dropped, reserving blocks as needed (they stay
   * reserved until dropped: a failed commit tries them again). 503 when the counter stays
   * contended or no id is left.
   */
  next(n: number): Promise<number[]>;
  /** Forgets ids: used by a committed creation, or found held by an address. */
  drop(ids: Iterable<number>): void;
}

/** The blocks of one process (one store) on `kv`. */
export function idBlocks(
  kv: Deno.Kv,
  guard: LayoutGuard,
  options: { maxConflicts: number; now?: () => number },
): IdBlocks {
  const now = options.now ?? (() => performance.now());
  // Free ids as ascending, disjoint ranges: blocks reserved one after another need not touch.
  let free: { from: number; to: number }[] = [];
  let size = 1;
  let reservedAt: number | undefined;

  function count(): number {
    return free.reduce((n, r) => n + r.to - r.from + 1, 0);
  }

  async function reserve(wanted: number): Promise<void> {
    const at = now();
    if (reservedAt !== undefined) {
      if (at - reservedAt < GROW_BELOW_MS) size = Math.min(size * 2, MAX_BLOCK);
      else if (at - reservedAt > SHRINK_ABOVE_MS) size = Math.max(1, Math.floor(size / 2));
    }
    const take = Math.max(wanted, size);
    for (let conflicts = 0;; conflicts++) {
      const counter = await readCounter(kv);
      if (counter.last >= MAX_ID) {
        throw new AppError("service-unavailable", "No address id is left to hand out.");
      }
      const to = Math.min(MAX_ID, counter.last + take);
      const op = guard.check(kv.atomic());
      moveCounter(op, counter, to);
      if ((await withKvRetry(() => op.commit())).ok) {
        free.push({ from: counter.last + 1, to });
        reservedAt = at;
        return;
      }
      await guard.afterConflict();
      if (conflicts + 1 >= options.maxConflicts) {
        throw new AppError("service-unavailable", "The id counter stayed contended.", {
          retryAfter: 1,
        });
      }
      await sleep(backoffDelay(Math.min(conflicts, 6), DEFAULT_RETRY));
    }
  }

  return {
    async next(n) {
      for (let have = count(); have < n; have = count()) await reserve(n - have);
      const ids: number[] = [];
      for (const r of free) {
        for (let id = r.from; id <= r.to && ids.length < n; id++) ids.push(id);
        if (ids.length === n) break;
      }
      return ids;
    },
    drop(ids) {
      const gone = new Set(ids);
      const kept: { from: number; to: number }[] = [];
      for (const r of free) {
        let from = r.from;
        for (let id = r.from; id <= r.to; id++) {
          if (!gone.has(id)) continue;
          if (id > from) kept.push({ from, to: id - 1 });
          from = id + 1;
        }
        if (from <= r.to) kept.push({ from, to: r.to });
      }
      free = kept;
    },
  };
}
