// The address book of the matrix's ceilings (raw_kv_address_book.ts, bare_http2_address_book.ts):
// every operation as a minimal server would write it straight on Deno KV, doing the KV operations
// this project's store does for it, with the same checks, and nothing else (no validation, no
// retries, no log):
//
// - read: one `get` of the record; a page: one `list` of the owner's index, one entry more than
//   the page holds (whether another page follows);
// - create: a group commit, as the store's: the creations waiting while a commit runs go in the
//   next one (at most MAX_BATCH), ids from blocks reserved on the id counter (checked and moved),
//   each creation checking its record absent and setting record + owner index, the owner's count
//   added to with `sum` (no quota: authentication off, as the bench runs the server), and the
//   layout key checked;
// - replace (version 2): `getMany` of the record and the id counter; version 1 (GraphQL, gRPC):
//   `get` of the record, the fields V1_KEPT kept; update: `get`, the merge patch, no write when
//   nothing changes; each write checks the layout and the record and sets record + owner index;
// - delete: `getMany` of the record and the owner's count, then the layout and record checked,
//   record and index deleted and the count summed down (checked and deleted at 0);
// - every write also appends its changes, as layout 5 does (store/addresses/change_log.ts): one
//   record per address written (`["feed_events", owner, n]`, with the address and expiring after a
//   day), the owner's sequence checked and set, the change clock summed; writes waiting at the same
//   time share one commit (never two of one record), as the store's change log commits them.
//
// The keys and values are layout 5 of store/addresses/keys.ts, written out here rather than
// imported: the peers share the data, not the code. A record is `{v, owner, address, etag}`, an
// owner-index entry `{etag, address}`, and every write of a version makes a new random ETag
// (address_book_text.ts), stored in both. The owner is "" (authentication off).

import { newEtag, openCursors } from "./address_book_text.ts";

const OWNER = "";
const RECORDS = "addresses";
const INDEX = ["owner_addresses", OWNER] as const;
const COUNT = ["owner_counts", OWNER];
const COUNTER = ["counters", "addresses"];
const LAYOUT = ["meta", "layout"];
const LAYOUT_VERSION = 5;
const RECORD_VERSION = 4;
const SEQ = ["feed_seq", OWNER];
const CLOCK = ["feed_clock"];
const RETENTION_MS = 24 * 60 * 60 * 1000;
const MAX_BATCH = 200;
const BLOCK = 1024;

/** An address as stored: its id and its fields, in the order they were written. */
export type Address = { id: number } & Record<string, string | number>;
export interface Stored {
  address: Address;
  etag: string;
}
/** A page: its addresses (with ETags) and the id after which the next one starts. */
export interface Page {
  items: Stored[];
  next: number | null;
}
interface Record_ {
  v?: number;
  owner: string;
  address: Address;
  etag: string;
}
interface IndexEntry {
  etag: string;
  address: Address;
}
type Fields = Record<string, unknown>;

/** What a write answers when the id is not the caller's (the server's 404). */
export class NotFound extends Error {}

/** The fields a body sets, absent (undefined) and `id` left out. */
function fieldsOf(input: Fields): Fields {
  const out: Fields = {};
  for (const [name, value] of Object.entries(input)) {
    if (name !== "id" && value !== undefined) out[name] = value;
  }
  return out;
}

function same(a: Fields, b: Fields): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) if (a[k] !== b[k]) return false;
  return true;
}

/** Opens the address book on `kv`; `v1Kept`: the fields a version 1 replace keeps. */
export async function openAddressBook(kv: Deno.Kv, v1Kept: readonly string[]) {
  const layout = await kv.get<{ version: number }>(LAYOUT);
  if (layout.value?.version !== LAYOUT_VERSION) {
    throw new Error(`the KV is not of layout ${LAYOUT_VERSION}: seed it with this checkout`);
  }
  const cursors = await openCursors(kv, OWNER);
  const check = (op: Deno.AtomicOperation) => op.check(layout);
  const key = (id: number) => [RECORDS, id];
  const indexKey = (id: number) => [...INDEX, id];

  // The change log: writes waiting together commit together, with their changes numbered on.
  type Change = { type: string; id: number; address?: Address; etag?: string };
  interface Pending {
    id: number;
    build: (op: Deno.AtomicOperation) => Change[];
    done: (ok: boolean) => void;
  }
  let head = await kv.get<Deno.KvU64>(SEQ);
  const pending: Pending[] = [];
  let committing = false;
  async function commitPending() {
    committing = true;
    while (pending.length > 0) {
      const batch: Pending[] = [];
      const taken = new Set<number>();
      for (let i = 0; i < pending.length && batch.length < MAX_BATCH;) {
        if (taken.has(pending[i]!.id)) i++;
        else {
          taken.add(pending[i]!.id);
          batch.push(...pending.splice(i, 1));
        }
      }
      const op = check(kv.atomic());
      let n = Number(head.value?.value ?? 0n);
      const at = Date.now();
      for (const p of batch) {
        for (const change of p.build(op)) {
          n++;
          op.set(["feed_events", OWNER, n], { v: 1, ...change, at }, { expireIn: RETENTION_MS });
        }
      }
      const seq = new Deno.KvU64(BigInt(n));
      const result = await op.check(head).set(SEQ, seq).sum(CLOCK, 1n).commit();
      if (result.ok) head = { key: SEQ, value: seq, versionstamp: result.versionstamp };
      else head = await kv.get<Deno.KvU64>(SEQ);
      for (const p of batch) p.done(result.ok);
    }
    committing = false;
  }
  /** Commits what `build` adds to an operation, with the changes it returns. */
  function commit(id: number, build: (op: Deno.AtomicOperation) => Change[]): Promise<boolean> {
    return new Promise((resolve) => {
      pending.push({ id, build, done: resolve });
      if (!committing) void commitPending();
    });
  }

  let ids: number[] = [];
  async function reserve(n: number): Promise<void> {
    for (;;) {
      const counter = await kv.get<Deno.KvU64>(COUNTER);
      const last = Number(counter.value?.value ?? 0n);
      const size = Math.max(n, BLOCK);
      const ok = await check(kv.atomic()).check(counter)
        .set(COUNTER, new Deno.KvU64(BigInt(last + size))).commit();
      if (!ok.ok) continue;
      for (let id = last + 1; id <= last + size; id++) ids.push(id);
      return;
    }
  }

  interface Waiter {
    input: Fields;
    resolve: (s: Stored) => void;
    reject: (e: unknown) => void;
  }
  const queue: Waiter[] = [];
  let draining = false;
  async function drain() {
    draining = true;
    while (queue.length > 0) {
      const batch = queue.splice(0, MAX_BATCH);
      try {
        if (ids.length < batch.length) await reserve(batch.length - ids.length);
        const taken = ids.slice(0, batch.length);
        const addresses = taken.map((id, i) => {
          const address = { id, ...batch[i]!.input } as Address;
          return { address, etag: newEtag() };
        });
        const ok = await commit(0, (op) => {
          op.sum(COUNT, BigInt(batch.length));
          for (const { address, etag } of addresses) {
            op.check({ key: key(address.id), versionstamp: null })
              .set(key(address.id), { v: RECORD_VERSION, owner: OWNER, address, etag })
              .set(indexKey(address.id), { etag, address });
          }
          return addresses.map(({ address, etag }) => ({
            type: "created",
            id: address.id,
            address,
            etag,
          }));
        });
        if (!ok) throw new Error("the create batch conflicted");
        ids = ids.slice(batch.length);
        addresses.forEach((stored, i) => batch[i]!.resolve(stored));
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    draining = false;
  }

  async function write(
    entry: Deno.KvEntry<Record_>,
    address: Address,
    type: string,
  ): Promise<Stored> {
    const etag = newEtag();
    const ok = await commit(address.id, (op) => {
      op.check(entry)
        .set(entry.key, { ...entry.value, v: RECORD_VERSION, address, etag })
        .set(indexKey(address.id), { etag, address });
      return [{ type, id: address.id, address, etag }];
    });
    if (!ok) throw new Error(`address ${address.id} changed meanwhile`);
    return { address, etag };
  }

  function mine(entry: Deno.KvEntryMaybe<Record_>): entry is Deno.KvEntry<Record_> {
    return entry.value !== null && entry.value.owner === OWNER;
  }

  return {
    /** The page tokens of the owner's listing. */
    cursors,
    async get(id: number): Promise<Stored | undefined> {
      const entry = await kv.get<Record_>(key(id));
      return mine(entry) ? { address: entry.value.address, etag: entry.value.etag } : undefined;
    },
    async page(limit: number, after: number): Promise<Page> {
      const selector = after > 0
        ? { prefix: INDEX, start: indexKey(after + 1) }
        : { prefix: INDEX };
      const items: Stored[] = [];
      for await (const e of kv.list<IndexEntry>(selector, { limit: limit + 1 })) {
        items.push({ address: e.value.address, etag: e.value.etag });
      }
      const more = items.length > limit;
      if (more) items.length = limit;
      return { items, next: more ? items[limit - 1]!.address.id : null };
    },
    create(input: Fields): Promise<Stored> {
      return new Promise((resolve, reject) => {
        queue.push({ input: fieldsOf(input), resolve, reject });
        if (!draining) void drain();
      });
    },
    /** Version 2: the address at `id` replaced whole (the server's 201 at a new id is not done). */
    async replace(id: number, input: Fields): Promise<Stored> {
      const [entry] = await kv.getMany<[Record_, Deno.KvU64]>([key(id), COUNTER]);
      if (!mine(entry)) throw new NotFound();
      return await write(entry, { id, ...fieldsOf(input) } as Address, "replaced");
    },
    /** Version 1: the existing address keeps `v1Kept` and takes every other field of `input`. */
    async replaceV1(id: number, input: Fields): Promise<Stored> {
      const entry = await kv.get<Record_>(key(id));
      if (!mine(entry)) throw new NotFound();
      const current = entry.value.address as Fields;
      const out: Fields = { id };
      for (const name of new Set([...Object.keys(current), ...Object.keys(input)])) {
        if (name === "id") continue;
        const value = v1Kept.includes(name) ? current[name] : input[name];
        if (value !== undefined) out[name] = value;
      }
      return await write(entry, out as Address, "replaced");
    },
    /** A JSON Merge Patch: a member sent replaces, null removes; nothing changed, no write. */
    async update(id: number, patch: Fields): Promise<Stored> {
      const entry = await kv.get<Record_>(key(id));
      if (!mine(entry)) throw new NotFound();
      const current = entry.value.address;
      const out: Fields = {};
      for (const name of new Set([...Object.keys(current), ...Object.keys(patch)])) {
        const value = name in patch && name !== "id" ? patch[name] : (current as Fields)[name];
        if (value !== undefined && value !== null) out[name] = value;
      }
      if (same(out, current)) return { address: current, etag: entry.value.etag };
      return await write(entry, out as Address, "updated");
    },
    async remove(id: number): Promise<void> {
      const [entry, count] = await kv.getMany<[Record_, Deno.KvU64]>([key(id), COUNT]);
      if (!mine(entry)) throw new NotFound();
      const left = Number(count.value?.value ?? 0n) - 1;
      const ok = await commit(id, (op) => {
        op.check(entry).delete(key(id)).delete(indexKey(id));
        if (left > 0) op.sum(COUNT, (1n << 64n) - 1n);
        else op.check(count).delete(COUNT);
        return [{ type: "deleted", id }];
      });
      if (!ok) throw new Error(`address ${id} changed meanwhile`);
    },
  };
}

/** The address book's interface. */
export type AddressBook = Awaited<ReturnType<typeof openAddressBook>>;
