import { withKvRetry } from "../kv/retry.ts";
import type { LayoutGuard } from "../layout/layout.ts";
import { COUNTER } from "./keys.ts";

/**
 * The id counter (store/addresses/keys.ts `COUNTER`): the highest id ever allocated. It only goes
 * up, and only in an atomic operation that checks it: a process reserving a block of ids for POST
 * (id_blocks.ts), a v2 PUT creating above it, an import raising it to its file's.
 */

/** The counter as read: its entry (for a check) and its value (0 when absent). */
interface Counter {
  entry: Deno.KvEntryMaybe<Deno.KvU64>;
  last: number;
}

/** The counter of an entry as read. */
export function counterOf(entry: Deno.KvEntryMaybe<Deno.KvU64>): Counter {
  return { entry, last: entry.value === null ? 0 : Number(entry.value.value) };
}

/** Reads the counter. */
export async function readCounter(kv: Deno.Kv): Promise<Counter> {
  return counterOf(await withKvRetry(() => kv.get<Deno.KvU64>(COUNTER)));
}

/** Adds to `op` the move of the counter from `counter` (checked unchanged) up to `to`. */
export function moveCounter(op: Deno.AtomicOperation, counter: Counter, to: number): void {
  op.check(counter.entry).set(COUNTER, new Deno.KvU64(BigInt(to)));
}

/** Raises the counter to `to` unless it is there already (an import: the file's ids). */
export async function raiseCounter(kv: Deno.Kv, guard: LayoutGuard, to: number): Promise<void> {
  for (;;) {
    const counter = await readCounter(kv);
    if (counter.last >= to) return;
    const op = guard.check(kv.atomic());
    moveCounter(op, counter, to);
    if ((await withKvRetry(() => op.commit())).ok) return;
    await guard.afterConflict();
  }
}
