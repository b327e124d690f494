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
//   record and index deleted and the count summed down (checked and deleted at 0).
//
// The keys and values are layout 4 of store/addresses/keys.ts, written out here rather than
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
const RECORD_VERSION = 4;
// Layout 5 stores every key as layout 4 did (it adds the owners' change logs, which these reads
// never touch), so the record's version stays 4 under it.
const LAYOUT_VERSION = 5;
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
        const op = check(kv.atomic()).sum(COUNT, BigInt(batch.length));
        const addresses = taken.map((id, i) => {
          const address = { id, ...batch[i]!.input } as Address;
          const etag = newEtag();
          op.check({ key: key(id), versionstamp: null })
            .set(key(id), { v: RECORD_VERSION, owner: OWNER, address, etag })
            .set(indexKey(id), { etag, address });
          return { address, etag };
        });
        const result = await op.commit();
        if (!result.ok) throw new Error("the create batch conflicted");
        ids = ids.slice(batch.length);
        addresses.forEach((stored, i) => batch[i]!.resolve(stored));
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    draining = false;
  }

  async function write(entry: Deno.KvEntry<Record_>, address: Address): Promise<Stored> {
    const etag = newEtag();
    const result = await check(kv.atomic()).check(entry)
      .set(entry.key, { ...entry.value, v: RECORD_VERSION, address, etag })
      .set(indexKey(address.id), { etag, address }).commit();
    if (!result.ok) throw new Error(`address ${address.id} changed meanwhile`);
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
      return await write(entry, { id, ...fieldsOf(input) } as Address);
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
      return await write(entry, out as Address);
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
      return await write(entry, out as Address);
    },
    async remove(id: number): Promise<void> {
      const [entry, count] = await kv.getMany<[Record_, Deno.KvU64]>([key(id), COUNT]);
      if (!mine(entry)) throw new NotFound();
      const op = check(kv.atomic()).check(entry).delete(key(id)).delete(indexKey(id));
      const left = Number(count.value?.value ?? 0n) - 1;
      if (left > 0) op.sum(COUNT, (1n << 64n) - 1n);
      else op.check(count).delete(COUNT);
      const result = await op.commit();
      if (!result.ok) throw new Error(`address ${id} changed meanwhile`);
    },
  };
}

/** The address book's interface. */
export type AddressBook = Awaited<ReturnType<typeof openAddressBook>>;
