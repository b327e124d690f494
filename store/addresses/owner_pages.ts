import { type IndexEntry, ownerKey, ownerPrefix } from "./keys.ts";
import { withKvRetry } from "../kv/retry.ts";
import { workSlots } from "../kv/work_slots.ts";

/**
 * Reads of an owner's index (`["owner_addresses", owner, id]`, ascending id): the pages of a
 * listing and of an export, a bounded number at a time per process.
 *
 * Why bounded: a page's entries are deserialized objects that live until the page is encoded.
 * With every client's page read at once (64 clients × 500 entries), they outlive the young
 * generation, and the old generation grows and is marked again and again: most of a page's cost
 * was the garbage collector, and memory grew with page size × clients. READ_SLOTS pages are read
 * at a time, each READ_BATCH entries per range read, handed on (encoded) before the next read:
 * a waiting request holds nothing, and the entries alive at any moment are at most READ_SLOTS ×
 * (READ_BATCH + 1).
 */

/** Index entries per range read of a page; the last read of a page may take one more. */
export const READ_BATCH = 100;

/** Page reads running at once in one process (the others wait their turn, in order). */
const READ_SLOTS = 4;

/** What a page reader hands on: the entries of one range read, ascending id. */
type TakeEntries = (entries: Deno.KvEntry<IndexEntry>[]) => void;

/** The page reads of one store. */
export interface OwnerPages {
  /**
   * Reads up to `limit` entries of the owner after id `after` (0: from the first), handing each
   * range read's entries to `take` before the next read. Resolves to the last id handed when more
   * entries follow (the next page's cursor), else null. Each range read is consistent; the page
   * as a whole is not one snapshot: an entry created or deleted during the read may or may not be
   * in it, one stored before and not deleted always is, once.
   */
  page(owner: string, after: number, limit: number, take: TakeEntries): Promise<number | null>;
  /** One range read of at most `limit` entries after `after` (the export's pages). */
  range(owner: string, after: number, limit: number): Promise<Deno.KvEntry<IndexEntry>[]>;
}

/** The page reads over `kv`, READ_SLOTS at a time. */
export function ownerPages(kv: Deno.Kv): OwnerPages {
  const slot = workSlots(READ_SLOTS);

  async function read(owner: string, after: number, limit: number) {
    const prefix = ownerPrefix(owner);
    const selector = after > 0 ? { prefix, start: ownerKey(owner, after + 1) } : { prefix };
    const entries: Deno.KvEntry<IndexEntry>[] = [];
    await withKvRetry(async () => {
      entries.length = 0;
      for await (const e of kv.list<IndexEntry>(selector, { limit })) entries.push(e);
    });
    return entries;
  }

  return {
    page: (owner, after, limit, take) =>
      slot(async () => {
        let left = limit;
        for (;;) {
          // The last read asks for one entry more than the page holds: whether another follows.
          const last = left <= READ_BATCH;
          const entries = await read(owner, after, last ? left + 1 : READ_BATCH);
          const more = entries.length > left;
          if (more) entries.length = left;
          if (entries.length > 0) {
            take(entries);
            after = entries[entries.length - 1]!.key[2] as number;
          }
          left -= entries.length;
          if (more) return after;
          if (last || entries.length < READ_BATCH) return null;
        }
      }),
    range: (owner, after, limit) => slot(() => read(owner, after, limit)),
  };
}
