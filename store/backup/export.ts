import {
  ADDRESS_PREFIX,
  IDEMPOTENCY_PREFIX,
  type IdempotencyRecord,
  isExpired,
  readRecord,
} from "../addresses/keys.ts";
import { isStoredAddress } from "../../lib/address.ts";
import { readCounter } from "../addresses/id_counter.ts";
import {
  addressLine,
  addressRuleProblem,
  BACKUP_FORMAT,
  BACKUP_VERSION,
  headerLine,
  idempotencyLine,
} from "./format.ts";
import { withKvRetry } from "../kv/retry.ts";
import { CURRENT_LAYOUT, newerLayout, readLayout } from "../layout/layout.ts";

/** Records read per KV range read. */
const PAGE = 1000;

/** What an export wrote. */
interface ExportSummary {
  addresses: number;
  /** Idempotency-Key records carried (those that still replay). */
  idempotency: number;
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
        const { owner, address, key } = readRecord(e);
        lines.push(addressLine(owner, address, key));
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
  const idempotency = await exportIdempotency(kv, write);
  const { last } = await readCounter(kv);
  await write(
    JSON.stringify({ kind: "counters", addressId: last }) + "\n" +
      JSON.stringify({ kind: "end", addresses, idempotency }) + "\n",
  );
  return { addresses, idempotency, counter: last, offRules };
}

/**
 * Writes the Idempotency-Key records that still replay, with when they stop, page by page; one
 * expired (KV deletes them only eventually, and a kept orphan waits for its sweep) or of an
 * older layout without its ETag is left out: it would replay nothing.
 */
async function exportIdempotency(
  kv: Deno.Kv,
  write: (text: string) => Promise<void>,
): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  for (;;) {
    const lines: string[] = [];
    let next: string | undefined;
    let read = 0;
    await withKvRetry(async () => {
      lines.length = 0;
      read = 0;
      const now = Date.now();
      const iter = kv.list<IdempotencyRecord>({ prefix: IDEMPOTENCY_PREFIX }, {
        limit: PAGE,
        cursor,
      });
      for await (const e of iter) {
        read++;
        const [, owner, key] = e.key;
        const r = e.value as Partial<IdempotencyRecord> | null;
        if (
          typeof owner !== "string" || typeof key !== "string" || r === null ||
          typeof r.etag !== "string" || typeof r.expiresAt !== "number" ||
          !isStoredAddress(r.address, r.address?.id) || isExpired({ expiresAt: r.expiresAt }, now)
        ) continue;
        lines.push(idempotencyLine({
          owner,
          key,
          address: r.address!,
          etag: r.etag,
          expiresAt: r.expiresAt,
          orphan: r.orphan,
        }));
      }
      next = read === PAGE ? iter.cursor : undefined;
    });
    if (lines.length > 0) await write(lines.join("\n") + "\n");
    count += lines.length;
    if (next === undefined) return count;
    cursor = next;
  }
}
