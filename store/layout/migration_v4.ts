import { newVersionEtag } from "../../lib/http/etag.ts";
import {
  ADDRESS_PREFIX,
  type AddressRecord,
  IDEMPOTENCY_TTL_MS,
  idempotencyKey,
  type IdempotencyRecord,
  isExpired,
  ownerKey,
  readRecord,
  RECORD_VERSION,
  setAddress,
} from "../addresses/keys.ts";
import { atomicBudget, keySize, valueSize } from "../kv/atomic_budget.ts";
import { getAll } from "../kv/read.ts";
import { withKvRetry } from "../kv/retry.ts";
import type { MigrationStep } from "./migrate.ts";

/** Layout 3's Idempotency-Key record: the creation's versionstamp where it was rewritten. */
type OlderKeyRecord = Omit<IdempotencyRecord, "etag"> & { versionstamp?: string; etag?: string };

const KEYS_PREFIX: Deno.KvKey = ["idempotency"];

/**
 * The cursor of this step: the phase (`a`: address records, `k`: Idempotency-Key records) and
 * KV's list cursor in it (empty: from the start of the phase).
 */
function parse(cursor: string | undefined): { phase: "a" | "k"; after: string | undefined } {
  if (cursor === undefined) return { phase: "a", after: undefined };
  const phase = cursor[0] === "k" ? "k" : "a";
  const after = cursor.slice(2);
  return { phase, after: after === "" ? undefined : after };
}

/**
 * The rewrite of a key record that replays, with `etag`: kept as long as it was (an orphan
 * without expiry; otherwise until `expiresAt`, which a layout 1 record lacks: it gets a day from
 * now, so it replays for longer rather than less).
 */
function rewrittenKey(
  op: Deno.AtomicOperation,
  entry: Deno.KvEntry<OlderKeyRecord>,
  etag: string,
  now: number,
): void {
  const { versionstamp: _, ...kept } = entry.value;
  const record: IdempotencyRecord = {
    ...kept,
    v: RECORD_VERSION,
    etag,
    expiresAt: kept.expiresAt ?? now + IDEMPOTENCY_TTL_MS,
  };
  op.check(entry);
  if (record.orphan) op.set(entry.key, record);
  else op.set(entry.key, record, { expireIn: Math.max(1, record.expiresAt! - now) });
}

/** True when a key record still replays and has no ETag of its own yet. */
function needsEtag(entry: Deno.KvEntryMaybe<OlderKeyRecord>, now: number): boolean {
  return entry.value !== null && entry.value.etag === undefined && !isExpired(entry.value, now);
}

type Batch = { cursor: string | undefined; items: number };

/**
 * The next batch of address records after `after`: each rewritten with a new ETag and its index
 * entry, checked as read; a key record that replays the record's current version gets that ETag.
 */
async function recordsBatch(
  kv: Deno.Kv,
  after: string | undefined,
  op: Deno.AtomicOperation,
  now: number,
): Promise<Batch> {
  const entries: Deno.KvEntry<unknown>[] = [];
  let next: string | undefined;
  let more = false;
  await withKvRetry(async () => {
    const budget = atomicBudget();
    entries.length = 0;
    next = undefined;
    more = false;
    const iter = kv.list({ prefix: ADDRESS_PREFIX }, after === undefined ? {} : { cursor: after });
    for await (const e of iter) {
      const { owner, address, key } = readRecord(e);
      const keyed = key === undefined ? 0 : 1;
      const value = valueSize({ v: RECORD_VERSION, owner, address, key, etag: newVersionEtag() });
      const fits = budget.take({
        checks: 1 + keyed,
        mutations: 2 + keyed,
        keyBytes: keySize(e.key) + keySize(ownerKey(owner, address.id)) +
          keyed * keySize(idempotencyKey(owner, key ?? "")),
        valueBytes: (2 + keyed) * value,
      });
      if (!fits) {
        more = true;
        break;
      }
      entries.push(e);
      next = iter.cursor;
    }
  });
  const records = entries.map(readRecord);
  const keyed = records.flatMap((r, i) => r.key === undefined ? [] : [i]);
  const keys = await getAll<OlderKeyRecord>(
    kv,
    keyed.map((i) => idempotencyKey(records[i]!.owner, records[i]!.key!)),
  );
  const keyOf = new Map(keyed.map((i, n) => [i, keys[n]!]));
  entries.forEach((e, i) => {
    const { owner, address, key } = records[i]!;
    const etag = newVersionEtag();
    const record: AddressRecord = { v: RECORD_VERSION, owner, address, etag };
    if (key !== undefined) record.key = key;
    setAddress(op.check(e), record);
    const keyEntry = keyOf.get(i);
    if (keyEntry === undefined || !needsEtag(keyEntry, now)) return;
    const kept = keyEntry as Deno.KvEntry<OlderKeyRecord>;
    // The creation's versionstamp: kept in the record once it was rewritten (an orphan).
    const creation = kept.value.versionstamp ?? kept.versionstamp;
    if (kept.value.address.id === address.id && creation === e.versionstamp) {
      rewrittenKey(op, kept, etag, now);
    }
  });
  return { cursor: more ? `a:${next ?? ""}` : "k:", items: entries.length };
}

/** The next batch of key records after `after` that still replay without an ETag: each gets one. */
async function keysBatch(
  kv: Deno.Kv,
  after: string | undefined,
  op: Deno.AtomicOperation,
  now: number,
): Promise<Batch> {
  const keys: Deno.KvEntry<OlderKeyRecord>[] = [];
  let next: string | undefined;
  let more = false;
  await withKvRetry(async () => {
    const budget = atomicBudget();
    keys.length = 0;
    next = undefined;
    more = false;
    const iter = kv.list<OlderKeyRecord>(
      { prefix: KEYS_PREFIX },
      after === undefined ? {} : { cursor: after },
    );
    for await (const e of iter) {
      if (needsEtag(e, now)) {
        const fits = budget.take({
          checks: 1,
          mutations: 1,
          keyBytes: keySize(e.key),
          valueBytes: valueSize({ ...e.value, v: RECORD_VERSION, etag: newVersionEtag() }),
        });
        if (!fits) {
          more = true;
          break;
        }
        keys.push(e);
      }
      next = iter.cursor;
    }
  });
  for (const e of keys) rewrittenKey(op, e, newVersionEtag(), now);
  return { cursor: more ? `k:${next ?? ""}` : undefined, items: keys.length };
}

/**
 * Layout 3 → 4: every version gets an ETag of its own (lib/http/etag.ts `newVersionEtag`), stored
 * with the record and its index entry, instead of the KV versionstamp that every address of one
 * atomic operation shared and that counted every owner's writes. First the address records, each
 * rewritten with its index entry (checked as read); an Idempotency-Key record that replays the
 * address's current version (written in the same operation, or kept its versionstamp) gets the
 * same ETag in the same operation, so a replay still answers the address's ETag. Then every other
 * key record that still replays gets an ETag of its own (its version is gone, so it matches
 * nothing, as a replayed ETag of a changed address did before). Expired key records are left:
 * they never replay.
 */
export const MIGRATION_V4: MigrationStep = {
  to: 4,
  what: "every address version gets an ETag of its own, stored with its record and index entry",
  batch(kv, cursor, op) {
    const { phase, after } = parse(cursor);
    const now = Date.now();
    return phase === "a" ? recordsBatch(kv, after, op, now) : keysBatch(kv, after, op, now);
  },
  finish() {},
};
