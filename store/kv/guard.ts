/** What a guarded KV handle asks before, after and on failure of each operation. */
interface StorageGate {
  /** Rejects when no write may be attempted now. */
  beforeWrite(): Promise<void>;
  /** After a write committed, before anyone is told: throws when it cannot be acknowledged. */
  afterWrite(): Promise<void>;
  /** The error to throw for a failed operation (a storage fault becomes an AppError). */
  failed(error: unknown, write: boolean): unknown;
  /** Runs an atomic commit (write_lock.ts); absent: as it is. */
  commit?<T>(run: () => Promise<T>): Promise<T>;
}

// Methods of Deno.Kv that write, and those that read (list is an iterator, handled apart).
const WRITES = new Set<PropertyKey>(["set", "delete", "enqueue"]);
const READS = new Set<PropertyKey>(["get", "getMany"]);

/**
 * The KV handle the store uses: the same API, with every write passed by the gate before and
 * after it runs, and every storage fault turned into the error model's answer. A Proxy, so
 * methods a later Deno adds pass straight through. Atomic operations and list iterators are
 * wrapped the same way.
 */
export function guardKv(kv: Deno.Kv, gate: StorageGate): Deno.Kv {
  async function write<T>(run: () => Promise<T>): Promise<T> {
    await gate.beforeWrite();
    let result: T;
    try {
      result = await run();
    } catch (error) {
      throw gate.failed(error, true);
    }
    // A commit whose check failed wrote nothing: nothing to confirm.
    if ((result as { ok?: boolean } | undefined)?.ok !== false) await gate.afterWrite();
    return result;
  }

  // A failed read (or list step) as the error model has it.
  const readFailed = (error: unknown): never => {
    throw gate.failed(error, false);
  };
  // Every read and list step passes here: one rejection handler on its own promise, no async
  // frame (a page reads hundreds of entries).
  function read<T>(run: () => Promise<T>): Promise<T> {
    try {
      return run().then(undefined, readFailed);
    } catch (error) {
      return Promise.reject(gate.failed(error, false));
    }
  }

  function atomic(op: Deno.AtomicOperation): Deno.AtomicOperation {
    const guarded: Deno.AtomicOperation = new Proxy(op, {
      get(target, name) {
        if (name === "commit") {
          const commit = () => target.commit();
          return () => write(gate.commit ? () => gate.commit!(commit) : commit);
        }
        const value = Reflect.get(target, name, target);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          const out = value.apply(target, args);
          return out === target ? guarded : out;
        };
      },
    });
    return guarded;
  }

  function list<T>(iterator: Deno.KvListIterator<T>): Deno.KvListIterator<T> {
    const step = () => iterator.next();
    const next = () => read(step);
    const guarded: Deno.KvListIterator<T> = new Proxy(iterator, {
      get(target, name) {
        if (name === "next") return next;
        if (name === Symbol.asyncIterator) return () => guarded;
        const value = Reflect.get(target, name, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    return guarded;
  }

  const methods = new Map<PropertyKey, unknown>();
  return new Proxy(kv, {
    get(target, name) {
      const known = methods.get(name);
      if (known !== undefined) return known;
      const value = Reflect.get(target, name, target);
      if (typeof value !== "function") return value;
      let method: unknown;
      if (name === "atomic") method = () => atomic(target.atomic());
      else if (name === "list") {
        method = (...args: Parameters<Deno.Kv["list"]>) => {
          try {
            return list(target.list(...args));
          } catch (error) {
            throw gate.failed(error, false);
          }
        };
      } else if (WRITES.has(name)) {
        method = (...args: unknown[]) => write(() => value.apply(target, args));
      } else if (READS.has(name)) {
        method = (...args: unknown[]) => read(() => value.apply(target, args));
      } else method = value.bind(target);
      methods.set(name, method);
      return method;
    },
  });
}
