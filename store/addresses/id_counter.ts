import { withKvRetry } from "../kv/retry.ts";
import { COUNTER, NEXT_TAKEN } from "./keys.ts";

/**
 * The id counter and its mark (store/addresses/keys.ts has the keys, create_batch.ts how POST
 * hands ids out): read together, and what a write at a chosen id (a v2 PUT, an import) must add
 * so that POST never hands that id out.
 */

/** The id counter and NEXT_TAKEN, read in one snapshot. */
export interface IdState {
  counter: Deno.KvEntryMaybe<Deno.KvU64>;
  /** The last id POST handed out (or skipped as taken). */
  last: number;
  /**
   * No address has an id above `last` and below this one; 0 when no address is above `last`;
   * null when unknown (a KV written before NEXT_TAKEN existed, or a fresh one).
   */
  nextTaken: number | null;
}

/** Reads the counter and NEXT_TAKEN together. */
export async function readIdState(kv: Deno.Kv): Promise<IdState> {
  const [counter, nextTaken] = await withKvRetry(() =>
    kv.getMany<[Deno.KvU64, Deno.KvU64]>([COUNTER, NEXT_TAKEN])
  );
  return idState(counter, nextTaken);
}

/** The id state from the two entries as read. */
export function idState(
  counter: Deno.KvEntryMaybe<Deno.KvU64>,
  nextTaken: Deno.KvEntryMaybe<Deno.KvU64>,
): IdState {
  return {
    counter,
    last: counter.value === null ? 0 : Number(counter.value.value),
    nextTaken: nextTaken.value === null ? null : Number(nextTaken.value.value),
  };
}

/**
 * Adds to a PUT's atomic operation what creating `id` means for POST's ids. Above the counter,
 * POST might hand the id out next: the counter is checked and rewritten (same value, new
 * versionstamp), so any batch that read it before fails and re-reads, and NEXT_TAKEN comes down
 * to the id. Every write of NEXT_TAKEN rewrites the counter it was read with, so checking the
 * counter covers both.
 */
export function notePutAt(op: Deno.AtomicOperation, state: IdState, id: number): void {
  if (id <= state.last) return;
  op.check(state.counter).set(COUNTER, new Deno.KvU64(BigInt(state.last)));
  const next = state.nextTaken;
  if (next !== null && (next === 0 || id < next)) op.set(NEXT_TAKEN, new Deno.KvU64(BigInt(id)));
}
