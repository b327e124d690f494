import { withKvRetry } from "./retry.ts";

// Deno KV reads at most 10 keys per getMany.
const GET_MANY_MAX = 10;

/** Reads any number of keys, 10 per read and the reads in parallel, each retried. */
export async function getAll<T>(
  kv: Deno.Kv,
  keys: readonly Deno.KvKey[],
): Promise<Deno.KvEntryMaybe<T>[]> {
  const reads: Promise<Deno.KvEntryMaybe<T>[]>[] = [];
  for (let i = 0; i < keys.length; i += GET_MANY_MAX) {
    const chunk = keys.slice(i, i + GET_MANY_MAX);
    reads.push(withKvRetry(() => kv.getMany<T[]>(chunk)));
  }
  return (await Promise.all(reads)).flat();
}

/**
 * Reads a few keys (1 to 10) as one consistent snapshot, as `kv.getMany` does; retry as the
 * caller's (a failure rejects every read it carried, each retried on its own).
 */
export type SharedReads = (keys: readonly Deno.KvKey[]) => Promise<Deno.KvEntryMaybe<unknown>[]>;

/**
 * KV calls of shared reads running at once, at most, for a KV on this machine (a file or
 * `:memory:`): its one SQLite thread runs the calls one at a time, so more would only wait there,
 * one by one, instead of together here.
 */
export const LOCAL_READS_AT_ONCE = 2;

/**
 * The same for a remote KV (KV Connect, Deno Deploy's): each call is a request of its own over the
 * network, answered in parallel, so reads share calls only past this many.
 */
export const REMOTE_READS_AT_ONCE = 32;

interface Waiting {
  keys: readonly Deno.KvKey[];
  resolve(entries: Deno.KvEntryMaybe<unknown>[]): void;
  reject(error: unknown): void;
}

/**
 * Reads by key that share `getMany` calls: a read goes at once while fewer than `atOnce` calls
 * run, else it waits, and the waiting reads go together, up to 10 keys per call, in their order,
 * each read's keys in the same call (one snapshot for them, as its own `getMany` gave).
 *
 * Why: each KV call costs the main thread and KV's one SQLite thread a fixed price (the op, a
 * wake of that thread, a read transaction) besides its keys, and the SQLite thread runs the calls
 * one at a time anyway. Where reads arrive together (a connection's HTTP/2 streams, a busy
 * process), a read alone in its call cost about twice the CPU of one sharing a call; where they
 * arrive one by one, they go one by one, as before (docs/bench.md, "Reads by key share the KV's
 * calls"). A read is never older than its request: the call that carries it starts after it was
 * asked for.
 */
export function sharedReads(kv: Deno.Kv, atOnce = LOCAL_READS_AT_ONCE): SharedReads {
  const waiting: Waiting[] = [];
  let running = 0;

  function start(): void {
    while (running < atOnce && waiting.length > 0) {
      let n = 0;
      let size = 0;
      while (n < waiting.length && size + waiting[n]!.keys.length <= GET_MANY_MAX) {
        size += waiting[n]!.keys.length;
        n++;
      }
      const batch = waiting.splice(0, n);
      const keys = n === 1 ? batch[0]!.keys : batch.flatMap((w) => w.keys);
      running++;
      let call: Promise<Deno.KvEntryMaybe<unknown>[]>;
      try {
        call = kv.getMany<unknown[]>(keys);
      } catch (error) {
        call = Promise.reject(error);
      }
      call.then((entries) => {
        running--;
        start();
        if (n === 1) return batch[0]!.resolve(entries);
        let at = 0;
        for (const w of batch) w.resolve(entries.slice(at, at += w.keys.length));
      }, (error) => {
        running--;
        start();
        for (const w of batch) w.reject(error);
      });
    }
  }

  return (keys) => {
    if (keys.length === 0 || keys.length > GET_MANY_MAX) {
      return Promise.reject(new RangeError(`a shared read takes 1 to ${GET_MANY_MAX} keys`));
    }
    return new Promise((resolve, reject) => {
      waiting.push({ keys, resolve, reject });
      start();
    });
  };
}
