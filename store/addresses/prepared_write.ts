import { type Cost, keySize, valueSize } from "../kv/atomic_budget.ts";
import type { Change, PreparedWrite } from "./change_log.ts";

/**
 * An atomic operation written down instead of sent: a write of the store builds its checks and
 * mutations on one exactly as on `kv.atomic()`, then hands `prepare(changes)` to the change log,
 * which adds them (with the changes) to the operation it commits. So the write paths keep their
 * own checks, and the log decides how they share a commit.
 */
export class WriteRecorder implements Deno.AtomicOperation {
  #steps: ((op: Deno.AtomicOperation) => void)[] = [];
  // What the log needs only to put several writes in one commit (their sizes, the keys they
  // write), kept as given and worked out if it asks.
  #checked: Deno.KvKey[] = [];
  #mutated: { key: Deno.KvKey; value: unknown; exclusive: boolean }[] = [];

  check(...checks: Deno.AtomicCheck[]): this {
    for (const c of checks) this.#checked.push(c.key);
    this.#steps.push((op) => op.check(...checks));
    return this;
  }

  mutate(...mutations: Deno.KvMutation[]): this {
    for (const m of mutations) {
      const exclusive = m.type === "set" || m.type === "delete";
      this.#mutated.push({ key: m.key, value: "value" in m ? m.value : undefined, exclusive });
    }
    this.#steps.push((op) => op.mutate(...mutations));
    return this;
  }

  sum(key: Deno.KvKey, n: bigint): this {
    this.#mutated.push({ key, value: undefined, exclusive: false });
    this.#steps.push((op) => op.sum(key, n));
    return this;
  }

  min(key: Deno.KvKey, n: bigint): this {
    this.#mutated.push({ key, value: undefined, exclusive: false });
    this.#steps.push((op) => op.min(key, n));
    return this;
  }

  max(key: Deno.KvKey, n: bigint): this {
    this.#mutated.push({ key, value: undefined, exclusive: false });
    this.#steps.push((op) => op.max(key, n));
    return this;
  }

  set(key: Deno.KvKey, value: unknown, options?: { expireIn?: number }): this {
    this.#mutated.push({ key, value, exclusive: true });
    this.#steps.push((op) => op.set(key, value, options));
    return this;
  }

  delete(key: Deno.KvKey): this {
    this.#mutated.push({ key, value: undefined, exclusive: true });
    this.#steps.push((op) => op.delete(key));
    return this;
  }

  enqueue(): this {
    throw new Error("the address book does not enqueue");
  }

  commit(): Promise<Deno.KvCommitResult | Deno.KvCommitError> {
    throw new Error("a prepared write commits through the change log");
  }

  /** The write, ready for the change log, making `changes` (each with its owner). */
  prepare(changes: readonly { owner: string; change: Change }[]): PreparedWrite {
    const steps = this.#steps;
    const checked = this.#checked;
    const mutated = this.#mutated;
    let claims: string[] | undefined;
    let cost: Required<Cost> | undefined;
    return {
      changes,
      // Two writes of one key must not share a commit: both checks would pass and the second
      // write would win unseen. Sums (and min, max) of one key add up in a commit, as apart.
      get claims() {
        return claims ??= mutated.filter((m) => m.exclusive).map((m) => claimOf(m.key));
      },
      get cost() {
        if (cost === undefined) {
          cost = { checks: checked.length, mutations: mutated.length, keyBytes: 0, valueBytes: 0 };
          for (const key of checked) cost.keyBytes += keySize(key);
          for (const { key, value } of mutated) {
            cost.keyBytes += keySize(key);
            if (value !== undefined) {
              cost.valueBytes += value instanceof Deno.KvU64 ? 16 : valueSize(value);
            }
          }
        }
        return cost;
      },
      apply: (op) => {
        for (const step of steps) step(op);
      },
    };
  }
}

/** A key as a string that tells its parts' types apart (`1` and `"1"` are other keys). */
function claimOf(key: Deno.KvKey): string {
  return key.map((part) =>
    typeof part === "string"
      ? `s${part}`
      : typeof part === "number" || typeof part === "bigint" || typeof part === "boolean"
      ? `${typeof part}${part}`
      : `u${[...(part as Uint8Array)].join(",")}`
  ).join("\u0000");
}
