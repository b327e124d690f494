import { ADDRESS_PREFIX, COUNTER } from "../addresses/keys.ts";
import { counterOf, moveCounter } from "../addresses/id_counter.ts";
import { withKvRetry } from "../kv/retry.ts";
import type { MigrationStep } from "./migrate.ts";

/**
 * Layout 2's mark: the lowest id above the counter a v2 PUT may have created an address at. No
 * address is above the counter in layout 3, so nothing reads it.
 */
const NEXT_TAKEN: Deno.KvKey = ["counters", "addresses_next_taken"];

/**
 * Layout 2 → 3: the id counter moves past the highest address id. In layout 2 a v2 PUT created
 * an address above the counter without moving it (POST skipped such ids with the help of
 * NEXT_TAKEN); layout 3 promises no address above the counter, which the v2 PUT rule (an id at
 * or below the counter is refused, one above it moves the counter) and the id blocks of POST
 * rely on. One batch: a read of the highest record key and a move of the counter, checked.
 */
export const MIGRATION_V3: MigrationStep = {
  to: 3,
  what: "the id counter moves past the highest address id; its layout 2 mark goes",
  async batch(kv, _cursor, op) {
    const [counterEntry, highest] = await withKvRetry(async () => {
      const counter = await kv.get<Deno.KvU64>(COUNTER);
      for await (const e of kv.list({ prefix: ADDRESS_PREFIX }, { reverse: true, limit: 1 })) {
        return [counter, e.key[1] as number] as const;
      }
      return [counter, 0] as const;
    });
    const counter = counterOf(counterEntry);
    if (highest <= counter.last) return { cursor: undefined, items: 0 };
    moveCounter(op, counter, highest);
    return { cursor: undefined, items: 1 };
  },
  finish(op) {
    op.delete(NEXT_TAKEN);
  },
};
