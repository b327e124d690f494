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
  #written = new Set<string>();
  #cost: Required<Cost> = { checks: 0, mutations: 0, keyBytes: 0, valueBytes: 0 };

  #mutation(key: Deno.KvKey, value: unknown, exclusive: boolean) {
    this.#cost.mutations++;
    this.#cost.keyBytes += keySize(key);
    if (value !== undefined) {
      this.#cost.valueBytes += value instanceof Deno.KvU64 ? 16 : valueSize(value);
    }
    // Two writes of one key must not share a commit: both checks would pass and the second
    // write would win unseen. Sums (and min, max) of one key add up in a commit, as apart.
    if (exclusive) this.#written.add(JSON.stringify(key, bigints));
  }

  check(...checks: Deno.AtomicCheck[]): this {
    for (const c of checks) {
      this.#cost.checks++;
      this.#cost.keyBytes += keySize(c.key);
    }
    this.#steps.push((op) => op.check(...checks));
    return this;
  }

  mutate(...mutations: Deno.KvMutation[]): this {
    for (const m of mutations) {
      this.#mutation(
        m.key,
        "value" in m ? m.value : undefined,
        m.type === "set" || m.type === "delete",
      );
    }
    this.#steps.push((op) => op.mutate(...mutations));
    return this;
  }

  sum(key: Deno.KvKey, n: bigint): this {
    this.#mutation(key, undefined, false);
    this.#steps.push((op) => op.sum(key, n));
    return this;
  }

  min(key: Deno.KvKey, n: bigint): this {
    this.#mutation(key, undefined, false);
    this.#steps.push((op) => op.min(key, n));
    return this;
  }

  max(key: Deno.KvKey, n: bigint): this {
    this.#mutation(key, undefined, false);
    this.#steps.push((op) => op.max(key, n));
    return this;
  }

  set(key: Deno.KvKey, value: unknown, options?: { expireIn?: number }): this {
    this.#mutation(key, value, true);
    this.#steps.push((op) => op.set(key, value, options));
    return this;
  }

  delete(key: Deno.KvKey): this {
    this.#mutation(key, undefined, true);
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
    return {
      changes,
      claims: [...this.#written],
      cost: { ...this.#cost },
      apply: (op) => {
        for (const step of steps) step(op);
      },
    };
  }
}

function bigints(_: string, value: unknown) {
  return typeof value === "bigint" ? `${value}n` : value;
}
