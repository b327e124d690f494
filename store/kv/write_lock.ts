/**
 * Commits to a KV file one writer at a time across processes, through an OS lock on a file beside
 * it (`<kv file>.write-lock`).
 *
 * Why: SQLite lets one connection write at a time; a connection that finds the file locked
 * sleeps and polls (its busy handler), so two processes or `deno serve --parallel` workers
 * writing together wait in steps of up to 100 ms for a lock held for about one. Waiting on an OS
 * lock instead wakes the next writer as soon as the last one is done. The lock is released when
 * its holder exits, kill -9 included. Within one handle commits are queued here, so the lock is
 * taken once per commit.
 */
export async function withWriteLock(kv: Deno.Kv, kvFile: string): Promise<Deno.Kv> {
  const lock = await Deno.open(`${kvFile}.write-lock`, { create: true, write: true });
  let last: Promise<unknown> = Promise.resolve();

  function locked<T>(run: () => Promise<T>): Promise<T> {
    const turn = last.then(async () => {
      await lock.lock(true);
      try {
        return await run();
      } finally {
        await lock.unlock();
      }
    });
    last = turn.catch(() => {});
    return turn;
  }

  return new Proxy(kv, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (name === "close") {
        return () => {
          lock.close();
          target.close();
        };
      }
      if (name !== "atomic") return typeof value === "function" ? value.bind(target) : value;
      return () => {
        const op = target.atomic();
        const commit = op.commit.bind(op);
        op.commit = () => locked(commit);
        return op;
      };
    },
  });
}
