/**
 * Commits to a KV file one writer at a time across processes, through an OS lock on a file beside
 * it (`<kv file>.write-lock`), while other writers are seen.
 *
 * Why: SQLite lets one connection write at a time; a connection that finds the file locked
 * sleeps and polls (its busy handler), so two processes or `deno serve --parallel` workers
 * writing together wait in steps of up to 100 ms for a lock held about a millisecond. Waiting on
 * an OS lock instead wakes the next writer as soon as the last one is done. The lock is released
 * when its holder exits, kill -9 included.
 *
 * Why only while other writers are seen: queueing every commit behind the lock costs a server
 * writing alone CPU it does not need to spend. A commit slower than CONTENDED_MS (the busy handler
 * slept) or refused as busy turns the lock on for ENGAGED_MS; a lock that another process held
 * when it was taken keeps it on.
 */

import { isTransientKvError } from "./retry.ts";

/** A commit this slow waited for another writer. */
const CONTENDED_MS = 20;
/** A lock this slow to take was held by another writer. */
const HELD_MS = 1;
/** How long the lock stays on after the last sign of another writer. */
const ENGAGED_MS = 60_000;

/** The lock of one KV handle. */
export interface WriteLock {
  /** Runs a commit, behind the lock while other writers are seen. */
  commit<T>(run: () => Promise<T>): Promise<T>;
  close(): void;
}

/** Opens (creating it) the lock file of `kvFile`. */
export async function openWriteLock(kvFile: string): Promise<WriteLock> {
  const file = await Deno.open(`${kvFile}.write-lock`, { create: true, write: true });
  let last: Promise<unknown> = Promise.resolve();
  let engagedUntil = 0;

  async function timed<T>(run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await run();
    } catch (error) {
      // SQLite's busy handler often gives up at once ("database is locked" within a millisecond,
      // measured with three processes committing to one file): as sure a sign of another writer
      // as a slow commit, and retried without the lock it can fail every attempt of a request.
      if (isTransientKvError(error)) engagedUntil = performance.now() + ENGAGED_MS;
      throw error;
    } finally {
      const now = performance.now();
      if (now - started > CONTENDED_MS) engagedUntil = now + ENGAGED_MS;
    }
  }

  // Queued per handle: the OS lock is per open file, so two commits of this handle must not hold
  // it together (the first to finish would release it under the second).
  function locked<T>(run: () => Promise<T>): Promise<T> {
    const turn = last.then(async () => {
      const asked = performance.now();
      await file.lock(true);
      const now = performance.now();
      if (now - asked > HELD_MS) engagedUntil = now + ENGAGED_MS;
      try {
        return await timed(run);
      } finally {
        await file.unlock();
      }
    });
    last = turn.catch(() => {});
    return turn;
  }

  return {
    commit: (run) => performance.now() < engagedUntil ? locked(run) : timed(run),
    close: () => file.close(),
  };
}
