import { sameAddress } from "../../lib/address.ts";
import {
  addressKey,
  type AddressRecord,
  countKey,
  idempotencyKey,
  type IdempotencyRecord,
  ownerKey,
  readRecord,
  RECORD_VERSION,
  setAddress,
} from "../addresses/keys.ts";
import { newVersionEtag } from "../../lib/http/etag.ts";
import { raiseCounter } from "../addresses/id_counter.ts";
import { atomicBudget, type Cost, keySize, valueSize } from "../kv/atomic_budget.ts";
import {
  type AddressLine,
  type BackupHeader,
  BackupLineError,
  type IdempotencyLine,
  parseHeader,
  parseLine,
  readLines,
} from "./format.ts";
import { getAll } from "../kv/read.ts";
import { withKvRetry } from "../kv/retry.ts";
import { type LayoutGuard, NO_GUARD } from "../layout/layout.ts";
import {
  type Change,
  type ChangeLog,
  DEFAULT_RETENTION_MS,
  openChangeLog,
} from "../addresses/change_log.ts";
import { WriteRecorder } from "../addresses/prepared_write.ts";
import { openLayout } from "../layout/migrate.ts";

/** What to do with an address whose id the target holds with other contents. */
export type OnConflict = "fail" | "skip";

/** Reported as the import goes: first while checking the file, then while writing it. */
interface ImportProgress {
  phase: "check" | "write";
  /** Addresses checked or written so far. */
  addresses: number;
  /** Addresses in the file (known once the check is done). */
  total: number | undefined;
}

/** What an import did. */
interface ImportSummary {
  header: BackupHeader;
  /** Addresses in the file. */
  addresses: number;
  /** Written now. */
  written: number;
  /** Already in the target exactly so (an earlier run, or the file's own source). */
  present: number;
  /** Left as the target has them (`--on-conflict=skip`). */
  skipped: number;
  /** The id counter of the file (the target's is at least this now). */
  counter: number;
  /** Idempotency-Key records: in the file, written, expired since the export (dropped), and
   * left as the target has them (the key replays another creation there, or this one already). */
  idempotency: { total: number; written: number; expired: number; kept: number };
}

/** The import refused the file; nothing was written unless the message says otherwise. */
export class ImportRefused extends Error {
  override name = "ImportRefused";
}

interface Pending {
  line: number;
  entry: AddressLine;
}

/** True when a stored record holds exactly the line's address. */
function same(stored: Deno.KvEntryMaybe<unknown>, line: Pending): boolean {
  if (stored.value === null) return false;
  const { owner, address } = readRecord(stored as Deno.KvEntry<unknown>);
  return owner === line.entry.owner && sameAddress(address, line.entry.address);
}

interface Scan {
  header: BackupHeader;
  addresses: number;
  idempotency: number;
  counter: number;
  /** The highest address id in the file (0: none). */
  highest: number;
  conflicts: { line: number; id: number }[];
  conflictCount: number;
}

const CHECK_CHUNK = 200;

/**
 * Reads the whole file once before anything is written: every line must be valid and in its
 * place (header, addresses, counters, end, each id once), and each address is compared with
 * what the target holds at its id.
 */
async function scan(
  kv: Deno.Kv,
  stream: ReadableStream<Uint8Array>,
  onProgress: (p: ImportProgress) => void,
): Promise<Scan> {
  let header: BackupHeader | undefined;
  let counter: number | undefined;
  let ended = false;
  let lines = 0;
  let addresses = 0;
  let keys = 0;
  const seenKeys = new Map<string, number>();
  const seen = new Map<number, number>();
  let highest = 0;
  const conflicts: { line: number; id: number }[] = [];
  let conflictCount = 0;
  let pending: Pending[] = [];
  const flush = async () => {
    const stored = await getAll(kv, pending.map((p) => addressKey(p.entry.address.id)));
    pending.forEach((p, i) => {
      const entry = stored[i]!;
      if (entry.value === null || same(entry, p)) return;
      conflictCount++;
      if (conflicts.length < 5) conflicts.push({ line: p.line, id: p.entry.address.id });
    });
    pending = [];
    onProgress({ phase: "check", addresses, total: undefined });
  };
  for await (const { line, text } of readLines(stream)) {
    lines = line;
    if (line === 1) {
      header = parseHeader(text);
      continue;
    }
    if (ended) {
      if (text.trim() !== "") throw new BackupLineError(line, "a line after the end line");
      continue;
    }
    const parsed = parseLine(text, line);
    if (parsed.kind === "idempotency") {
      if (counter !== undefined) {
        throw new BackupLineError(line, "an idempotency line after the counters");
      }
      const slot = JSON.stringify([parsed.owner, parsed.key]);
      const first = seenKeys.get(slot);
      if (first !== undefined) {
        throw new BackupLineError(line, `the key appears a second time (first on line ${first})`);
      }
      seenKeys.set(slot, line);
      keys++;
    } else if (parsed.kind === "address") {
      if (counter !== undefined) throw new BackupLineError(line, "an address after the counters");
      if (keys > 0) throw new BackupLineError(line, "an address after the idempotency lines");
      const id = parsed.address.id;
      const first = seen.get(id);
      if (first !== undefined) {
        throw new BackupLineError(line, `id ${id} appears a second time (first on line ${first})`);
      }
      seen.set(id, line);
      highest = Math.max(highest, id);
      addresses++;
      pending.push({ line, entry: parsed });
      if (pending.length === CHECK_CHUNK) await flush();
    } else if (parsed.kind === "counters") {
      if (counter !== undefined) throw new BackupLineError(line, "a second counters line");
      counter = parsed.addressId;
    } else {
      if (counter === undefined) throw new BackupLineError(line, "the end line before counters");
      if (parsed.addresses !== addresses) {
        throw new BackupLineError(
          line,
          `the end line counts ${parsed.addresses} addresses, the file has ${addresses}`,
        );
      }
      if ((parsed.idempotency ?? 0) !== keys) {
        throw new BackupLineError(
          line,
          `the end line counts ${parsed.idempotency ?? 0} idempotency lines, the file has ${keys}`,
        );
      }
      ended = true;
    }
  }
  if (header === undefined) throw new BackupLineError(1, "the file is empty");
  if (!ended) {
    throw new BackupLineError(
      lines,
      "the file ends here without its end line (an export cut off?)",
    );
  }
  if (pending.length > 0) await flush();
  return {
    header,
    addresses,
    idempotency: keys,
    counter: counter!,
    highest,
    conflicts,
    conflictCount,
  };
}

/** The cost of one address in a write batch (the count's sum only for an owner new to it). */
function costOf(p: Pending, newOwner: boolean): Cost {
  const { owner, address } = p.entry;
  // With the change that says it was created (change_log.ts): a third copy, a third key.
  return {
    checks: 1,
    mutations: 3 + (newOwner ? 1 : 0),
    keyBytes: keySize(addressKey(address.id)) + 2 * keySize(ownerKey(owner, address.id)) +
      (newOwner ? keySize(countKey(owner)) : 0),
    valueBytes: 3 * valueSize({ v: RECORD_VERSION, owner, address, etag: newVersionEtag() }),
  };
}

/**
 * Writes one batch: each absent address with its index entry, checked absent, and the owners'
 * counts (added with `sum`, exact beside servers creating at the same time), in one atomic
 * operation. Every id is at or below the id counter (raised before the first batch), so POST never
 * hands it out; one a server reserved and has not used yet is dropped by that server's batch,
 * which checks its records absent (store/addresses/id_blocks.ts).
 */
async function writeBatch(
  kv: Deno.Kv,
  { guard, log }: { guard: LayoutGuard; log: ChangeLog },
  batch: Pending[],
  onConflict: OnConflict,
): Promise<{ written: number; present: number; skipped: number }> {
  for (;;) {
    const stored = await getAll(kv, batch.map((p) => addressKey(p.entry.address.id)));
    const op = new WriteRecorder();
    guard.check(op);
    const counts = new Map<string, number>();
    const changes: { owner: string; change: Change }[] = [];
    let written = 0, present = 0, skipped = 0;
    batch.forEach((p, i) => {
      const entry = stored[i]!;
      const { owner, address } = p.entry;
      if (entry.value !== null) {
        if (same(entry, p)) present++;
        else if (onConflict === "skip") skipped++;
        else {
          throw new ImportRefused(
            `line ${p.line}: id ${address.id} holds another address in the target (written ` +
              "there after the check); the lines before this batch were imported",
          );
        }
        return;
      }
      // A backup carries no ETags: an imported address is a new version of it.
      const record: AddressRecord = { v: RECORD_VERSION, owner, address, etag: newVersionEtag() };
      if (p.entry.key !== undefined) record.key = p.entry.key;
      setAddress(op.check({ key: entry.key, versionstamp: null }), record);
      changes.push({
        owner,
        change: { type: "created", id: address.id, address, etag: record.etag },
      });
      counts.set(owner, (counts.get(owner) ?? 0) + 1);
      written++;
    });
    if (written === 0) return { written, present, skipped };
    for (const [owner, n] of counts) op.sum(countKey(owner), BigInt(n));
    if ((await log.commit(op.prepare(changes))).ok) return { written, present, skipped };
    await guard.afterConflict();
  }
}

/** The cost of one idempotency record in a write batch. */
function keyCost(line: IdempotencyLine): Cost {
  return {
    checks: 1,
    mutations: line.orphan ? 2 : 1,
    keyBytes: keySize(idempotencyKey(line.owner, line.key)) +
      (line.orphan ? keySize(countKey(line.owner)) : 0),
    valueBytes: valueSize({ ...line, v: RECORD_VERSION }),
  };
}

/**
 * Writes one batch of Idempotency-Key records, each checked absent, with what it has left of
 * its 24 hours; one that expired since the export is dropped, and one the target holds already
 * is left as it is (the same record, or another creation's key there). An orphan (its address
 * was deleted) is kept without expiry and counts one toward its owner's quota until swept, as
 * in the source (store/addresses/idempotency.ts `orphanKeyOf`).
 */
async function writeKeys(
  kv: Deno.Kv,
  guard: LayoutGuard,
  batch: IdempotencyLine[],
): Promise<{ written: number; expired: number; kept: number }> {
  for (;;) {
    const now = Date.now();
    const live = batch.filter((line) => line.expiresAt > now);
    const stored = await getAll(kv, live.map((line) => idempotencyKey(line.owner, line.key)));
    const op = guard.check(kv.atomic());
    let written = 0, kept = 0;
    live.forEach((line, i) => {
      const entry = stored[i]!;
      if (entry.value !== null) {
        kept++;
        return;
      }
      const record: IdempotencyRecord = {
        v: RECORD_VERSION,
        address: line.address,
        etag: line.etag,
        expiresAt: line.expiresAt,
      };
      op.check({ key: entry.key, versionstamp: null });
      if (line.orphan) {
        op.set(entry.key, { ...record, orphan: true }).sum(countKey(line.owner), 1n);
      } else op.set(entry.key, record, { expireIn: line.expiresAt - now });
      written++;
    });
    const expired = batch.length - live.length;
    if (written === 0) return { written, expired, kept };
    if ((await withKvRetry(() => op.commit())).ok) return { written, expired, kept };
    await guard.afterConflict();
  }
}

/**
 * Imports a backup file into a KV (of the current layout, or fresh). The file is read twice:
 * once to check every line and compare every address with the target (a bad line, or with
 * `fail` any conflicting address, refuses the file before anything is written), then to write
 * it in bounded atomic batches, each address whole (record, index entry, count) or not at all.
 * Running it again after it was stopped (even by kill -9) finds what was written and goes on;
 * importing the same file twice changes nothing.
 */
export async function importKv(
  kv: Deno.Kv,
  label: string,
  open: () => Promise<ReadableStream<Uint8Array>>,
  options: {
    onConflict?: OnConflict;
    onProgress?: (p: ImportProgress) => void;
    /** How long the changes the import makes are kept (`EVENTS_RETENTION`). */
    retentionMs?: number;
  } = {},
): Promise<ImportSummary> {
  const onConflict = options.onConflict ?? "fail";
  const onProgress = options.onProgress ?? (() => {});
  const guard = await openLayout(kv, label, { migrateOnStart: false });
  // Every address it writes is a change servers on the KV stream (a creation).
  const log = openChangeLog(kv, {
    retentionMs: options.retentionMs ?? DEFAULT_RETENTION_MS,
    guard: NO_GUARD.check,
  });
  const checked = await scan(kv, await open(), onProgress);
  if (checked.conflictCount > 0 && onConflict === "fail") {
    const first = checked.conflicts.map((c) => `line ${c.line} (id ${c.id})`).join(", ");
    throw new ImportRefused(
      `${checked.conflictCount} address(es) of the file conflict with what the target holds ` +
        `at their ids, first ${first}; nothing was imported. --on-conflict=skip keeps the ` +
        "target's and imports the rest.",
    );
  }
  // Past every id of the file too: a file exported by a version that let a v2 PUT create above
  // the counter may hold such ids; none may stay above the counter (keys.ts).
  await raiseCounter(kv, guard, Math.max(checked.counter, checked.highest));
  const summary = { written: 0, present: 0, skipped: 0 };
  const idempotency = { total: checked.idempotency, written: 0, expired: 0, kept: 0 };
  let keyBatch: IdempotencyLine[] = [];
  let keyBudget = atomicBudget();
  const flushKeys = async () => {
    const done = await writeKeys(kv, guard, keyBatch);
    idempotency.written += done.written;
    idempotency.expired += done.expired;
    idempotency.kept += done.kept;
    keyBatch = [];
    keyBudget = atomicBudget();
  };
  let batch: Pending[] = [];
  let budget = atomicBudget();
  let owners = new Set<string>();
  const flush = async () => {
    const done = await writeBatch(kv, { guard, log }, batch, onConflict);
    summary.written += done.written;
    summary.present += done.present;
    summary.skipped += done.skipped;
    batch = [];
    budget = atomicBudget();
    owners = new Set();
    onProgress({
      phase: "write",
      addresses: summary.written + summary.present + summary.skipped,
      total: checked.addresses,
    });
  };
  for await (const { line, text } of readLines(await open())) {
    if (line === 1 || text.trim() === "") continue;
    const parsed = parseLine(text, line);
    if (parsed.kind === "idempotency") {
      // After every address line: the addresses are all written before the first key.
      if (batch.length > 0) await flush();
      if (!keyBudget.take(keyCost(parsed))) {
        await flushKeys();
        keyBudget.take(keyCost(parsed));
      }
      keyBatch.push(parsed);
      continue;
    }
    if (parsed.kind !== "address") continue;
    const pending = { line, entry: parsed };
    const fits = (p: Pending) => budget.take(costOf(p, !owners.has(p.entry.owner)));
    if (!fits(pending)) {
      await flush();
      fits(pending);
    }
    owners.add(parsed.owner);
    batch.push(pending);
  }
  if (batch.length > 0) await flush();
  if (keyBatch.length > 0) await flushKeys();
  return {
    header: checked.header,
    addresses: checked.addresses,
    counter: checked.counter,
    ...summary,
    idempotency,
  };
}
