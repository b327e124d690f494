import { ADDRESS_PREFIX, readRecord } from "../addresses/keys.ts";
import { readCounter } from "../addresses/id_counter.ts";
import {
  addressLine,
  addressRuleProblem,
  BACKUP_FORMAT,
  BACKUP_VERSION,
  headerLine,
} from "./format.ts";
import { withKvRetry } from "../kv/retry.ts";
import { CURRENT_LAYOUT, newerLayout, readLayout } from "../layout/layout.ts";

/** Records read per KV range read. */
const PAGE = 1000;

/** What an export wrote. */
interface ExportSummary {
  addresses: number;
  counter: number;
  /**
   * Addresses stored under older, looser rules that today's API refuses (the import refuses
   * their lines), and the first few of their ids.
   */
  offRules: { count: number; ids: number[] };
}

/**
 * Writes every address of a KV, with its owner, as backup lines (store/backup/format.ts), while
 * servers keep using it: the records are read page by page, each page a consistent read, so an
 * address stored before the export began and not deleted during it is always in the file. The
 * id counter is read after the last page. A KV of layout 1 (or one being migrated to 2) is read
 * as it is; a newer one is refused. `write` gets about a page of lines at a time.
 */
export async function exportKv(
  kv: Deno.Kv,
  label: string,
  write: (text: string) => Promise<void>,
  onProgress: (addresses: number) => void = () => {},
): Promise<ExportSummary> {
  const layout = await readLayout(kv, label);
  const highest = Math.max(layout.version ?? 0, layout.migratingTo ?? 0);
  if (highest > CURRENT_LAYOUT) throw newerLayout(label, highest);
  const header = {
    format: BACKUP_FORMAT,
    version: BACKUP_VERSION,
    source: label,
    layout: layout.version,
    exportedAt: new Date().toISOString(),
  } as const;
  await write(headerLine(header) + "\n");
  let addresses = 0;
  const offRules = { count: 0, ids: [] as number[] };
  let cursor: string | undefined;
  for (;;) {
    const lines: string[] = [];
    let next: string | undefined;
    const off: number[] = [];
    await withKvRetry(async () => {
      lines.length = 0;
      off.length = 0;
      const iter = kv.list({ prefix: ADDRESS_PREFIX }, { limit: PAGE, cursor });
      for await (const e of iter) {
        const { owner, address } = readRecord(e);
        lines.push(addressLine(owner, address));
        if (addressRuleProblem(address) !== undefined) off.push(address.id);
      }
      next = lines.length === PAGE ? iter.cursor : undefined;
    });
    offRules.count += off.length;
    offRules.ids.push(...off.slice(0, 5 - offRules.ids.length));
    if (lines.length > 0) await write(lines.join("\n") + "\n");
    addresses += lines.length;
    onProgress(addresses);
    if (next === undefined) break;
    cursor = next;
  }
  const { last } = await readCounter(kv);
  await write(
    JSON.stringify({ kind: "counters", addressId: last }) + "\n" +
      JSON.stringify({ kind: "end", addresses }) + "\n",
  );
  return { addresses, counter: last, offRules };
}
