import { DEFAULT_MAX_ADDRESSES_PER_OWNER } from "../../lib/config.ts";
import { AppError } from "../../lib/errors.ts";
import {
  type Address,
  addressAt,
  type AddressInput,
  replaceV1,
  sameAddress,
} from "../../lib/address.ts";
import { type AddressStoreOptions, createIdAllocator } from "./create_batch.ts";
import {
  type Created,
  deduplicateInFlight,
  orphanKeyOf,
  type WriteOptions,
} from "./idempotency.ts";
import { counterOf, moveCounter } from "./id_counter.ts";
import {
  addressKey,
  type AddressRecord,
  COUNTER,
  countKey,
  MAX_PUT_AHEAD,
  ownerKey,
  ownerRefused,
  RECORD_VERSION,
  setAddress,
} from "./keys.ts";
import { newVersionEtag, type Precondition } from "../../lib/http/etag.ts";
import { pageTokens } from "./page_tokens.ts";
import { withKvRetry } from "../kv/retry.ts";
import { sharedReads } from "../kv/read.ts";
import { NO_GUARD } from "../layout/layout.ts";
import { type ChangeType, DEFAULT_RETENTION_MS, openChangeLog } from "./change_log.ts";
import { WriteRecorder } from "./prepared_write.ts";
import {
  addToCount,
  countForCreate,
  countOf,
  createKeySweeper,
  isLimited,
  setCount,
} from "./quota.ts";
import { eraseOwner, ownerAddresses } from "./owner_data.ts";
import { ownerPages } from "./owner_pages.ts";

export type { AddressStoreOptions, Precondition, WriteOptions };

/** An address together with the ETag of its stored version (keys.ts `AddressRecord.etag`). */
export interface StoredAddress {
  address: Address;
  etag: string;
}

/** One page of a listing. */
export interface AddressPage {
  items: StoredAddress[];
  nextCursor: string | null;
}

/**
 * The address book. Every address belongs to an owner; another owner's address is absent for
 * the caller (ids stay global). Every method may throw AppError (400, 404, 409, 412, 422, 503).
 * A write given a precondition (lib/http/etag.ts) is 412 `precondition-failed` unless it holds
 * on the caller's address at that id as the write's atomic operation finds it (its ETag, or none
 * when the caller has no address there): no other write can come between the check and the write.
 * A write given `WriteOptions.wanted` asks it right before each commit and, when it throws,
 * commits nothing and rejects with its error (a caller whose deadline passed).
 */
export interface AddressStore {
  /** Creates with a new id; with an Idempotency-Key, a repeat replays the first creation. */
  create(
    owner: string,
    input: AddressInput,
    idempotencyKey?: string,
    options?: WriteOptions,
  ): Promise<Created>;
  get(owner: string, id: number): Promise<StoredAddress | undefined>;
  /**
   * Version 1 PUT: the owner's existing address gets the body's fields except those it keeps
   * (lib/address.ts `replaceV1`: the name); otherwise the body is created with a new id.
   */
  put(
    owner: string,
    id: number,
    input: AddressInput,
    expected?: Precondition,
    options?: WriteOptions,
  ): Promise<StoredAddress & { created: boolean }>;
  /**
   * Version 2 PUT (RFC 9110): an absent id is created at that id, the owner's existing address
   * is replaced whole; an id another owner holds is 409 `id-taken`.
   */
  putAt(
    owner: string,
    id: number,
    input: AddressInput,
    expected?: Precondition,
  ): Promise<StoredAddress & { created: boolean }>;
  /** Changes the owner's address to what `change` makes of it (re-run on a concurrent write). */
  patch(
    owner: string,
    id: number,
    change: (current: Address) => AddressInput,
    expected?: Precondition,
    options?: WriteOptions,
  ): Promise<StoredAddress>;
  delete(
    owner: string,
    id: number,
    expected?: Precondition,
    options?: WriteOptions,
  ): Promise<void>;
  /**
   * A page of the owner's addresses after `cursor` (a page token, page_tokens.ts; one of
   * another owner, another KV or edited is 400 `invalid-parameter`), with the next page's token.
   */
  list(
    owner: string,
    options: { limit: number; cursor?: string | undefined },
  ): Promise<AddressPage>;
  /**
   * The page `list` would answer, handed to `take` a range read at a time (at most a few hundred
   * addresses each, ascending id) instead of returned whole, so a caller that encodes each batch
   * as it comes never holds the page's objects; resolves to the page's `nextCursor`. `take` must
   * not keep the arrays or the addresses. A failure rejects before or after some batches.
   */
  listBatches(
    owner: string,
    options: { limit: number; cursor?: string | undefined },
    take: (addresses: Address[]) => void,
  ): Promise<string | null>;
  /** The page tokens that resume the owner's listing after each of `ids` (GraphQL's edges). */
  cursorsAfter(owner: string, ids: readonly number[]): Promise<string[]>;
  /** Every address of the owner by ascending id, read a page at a time as it is consumed. */
  exportAll(owner: string): AsyncGenerator<Address, void, undefined>;
  /**
   * Deletes every address and Idempotency-Key record of the owner (and their count), in bounded
   * atomic batches; returns how many addresses it deleted. Repeating it finds nothing.
   */
  erase(owner: string): Promise<number>;
}

/**
 * Throws 412 unless `expected` is absent or holds on the caller's address `id` (its ETag, or
 * undefined when the caller has none there).
 */
function checkExpected(expected: Precondition | undefined, etag: string | undefined, id: number) {
  const failed = expected?.(etag);
  if (failed === undefined) return;
  throw new AppError(
    "precondition-failed",
    failed === "If-Match"
      ? `If-Match does not match the current version of address ${id}.`
      : `If-None-Match matches the current version of address ${id} (or is *).`,
  );
}

function idTaken(id: number): AppError {
  return new AppError("id-taken", `Address id ${id} is not available.`);
}

function notFound(id: number): AppError {
  return new AppError("address-not-found", `No address has id ${id}.`);
}

/**
 * Opens the address book on a KV handle (keys.ts has the layout, create_batch.ts how POST
 * allocates ids, idempotency.ts and quota.ts the rest of a creation). Every write of an address
 * sets its record and its owner-index entry in one atomic operation that checks the record, so
 * the two never disagree.
 */
export function openAddressStore(kv: Deno.Kv, options: AddressStoreOptions = {}): AddressStore {
  const guard = options.guard ?? NO_GUARD;
  const maxPerOwner = options.maxPerOwner ?? DEFAULT_MAX_ADDRESSES_PER_OWNER;
  const limited = isLimited(maxPerOwner);
  const sweeper = createKeySweeper(kv, guard);
  const pages = ownerPages(kv);
  const tokens = options.pageTokens ?? pageTokens(kv);
  const log = options.changeLog ??
    openChangeLog(kv, { retentionMs: DEFAULT_RETENTION_MS, guard: NO_GUARD.check });
  const create = deduplicateInFlight(createIdAllocator(kv, { ...options, log }, sweeper).allocate);

  const shared = sharedReads(kv, options.readsAtOnce);

  function read(id: number) {
    return withKvRetry(() => shared([addressKey(id)])).then(
      ([entry]) => entry as Deno.KvEntryMaybe<AddressRecord>,
    );
  }

  /** An address's record and one more key, read together. */
  function readWith<T>(id: number, key: Deno.KvKey) {
    return withKvRetry(() => shared([addressKey(id), key])) as Promise<
      [Deno.KvEntryMaybe<AddressRecord>, Deno.KvEntryMaybe<T>]
    >;
  }

  async function get(owner: string, id: number): Promise<StoredAddress | undefined> {
    const entry = await read(id);
    return entry.value === null || entry.value.owner !== owner
      ? undefined
      : { address: entry.value.address, etag: entry.value.etag };
  }

  /** Replaces the owner's address in `entry` with `address`; null when `entry` is stale. */
  async function replace(
    entry: Deno.KvEntry<AddressRecord>,
    address: Address,
    type: ChangeType,
    options: WriteOptions,
  ): Promise<StoredAddress | null> {
    const etag = newVersionEtag();
    const record: AddressRecord = { ...entry.value, v: RECORD_VERSION, address, etag };
    const op = new WriteRecorder();
    setAddress(guard.check(op).check(entry), record);
    const change = { type, id: address.id, address, etag };
    options.wanted?.();
    const result = await log.commit(op.prepare([{ owner: record.owner, change }]));
    if (result.ok) return { address, etag };
    await guard.afterConflict();
    return null;
  }

  async function put(
    owner: string,
    id: number,
    input: AddressInput,
    expected?: Precondition,
    options: WriteOptions = {},
  ) {
    for (;;) {
      const entry = await read(id);
      if (entry.value === null || entry.value.owner !== owner) {
        checkExpected(expected, undefined, id);
        // Version 1 PUT, rule 2 (docs/http.md): stored as new (also when another owner holds id).
        const { address, etag } = await create(owner, input, undefined, options);
        return { address, etag, created: true };
      }
      checkExpected(expected, entry.value.etag, id);
      const updated = replaceV1(entry.value.address, input);
      const stored = await replace(
        entry as Deno.KvEntry<AddressRecord>,
        updated,
        "replaced",
        options,
      );
      if (stored) return { ...stored, created: false };
      // Changed or deleted between read and write: the precondition is evaluated again on what
      // is there now (without one, the latest state decides again).
    }
  }

  async function putAt(
    owner: string,
    id: number,
    input: AddressInput,
    expected?: Precondition,
    options: WriteOptions = {},
  ) {
    const address = addressAt(id, input);
    for (;;) {
      const [entry, counterEntry] = await readWith<Deno.KvU64>(id, COUNTER);
      if (entry.value !== null && entry.value.owner === owner) {
        checkExpected(expected, entry.value.etag, id);
        const stored = await replace(
          entry as Deno.KvEntry<AddressRecord>,
          address,
          "replaced",
          options,
        );
        if (stored) return { ...stored, created: false };
        continue;
      }
      // Not the caller's: absent for them, whoever else holds it. `If-Match` cannot hold;
      // `If-None-Match` holds, and the creation below checks the record absent as it writes.
      checkExpected(expected, undefined, id);
      // At or below the counter the id was allocated once: another owner's address, a deleted
      // one, or an id a process reserved. One answer for all three, so it tells nothing about
      // other owners, and no id is used twice. Far above the counter it is refused too (keys.ts
      // MAX_PUT_AHEAD): the counter is everyone's, an id it may not jump to is nobody's.
      const counter = counterOf(counterEntry);
      if (entry.value !== null || id <= counter.last || id > counter.last + MAX_PUT_AHEAD) {
        throw idTaken(id);
      }
      const etag = newVersionEtag();
      const record: AddressRecord = { v: RECORD_VERSION, owner, address, etag };
      const op = new WriteRecorder();
      setAddress(guard.check(op).check({ key: addressKey(id), versionstamp: null }), record);
      // Above the counter: the counter moves to the id in the operation that checks it.
      moveCounter(op, counter, id);
      if (limited) {
        const count = await countForCreate(kv, sweeper, owner, maxPerOwner);
        op.check(count);
        setCount(op, owner, countOf(count) + 1);
      } else addToCount(op, owner, 1);
      const change = { type: "created" as const, id, address, etag };
      options.wanted?.();
      const result = await log.commit(op.prepare([{ owner, change }]));
      if (result.ok) return { address, etag, created: true };
      await guard.afterConflict();
    }
  }

  async function patch(
    owner: string,
    id: number,
    change: (current: Address) => AddressInput,
    expected?: Precondition,
    options: WriteOptions = {},
  ): Promise<StoredAddress> {
    for (;;) {
      const entry = await read(id);
      if (entry.value === null || entry.value.owner !== owner) throw notFound(id);
      checkExpected(expected, entry.value.etag, id);
      const current = entry.value.address;
      const address = addressAt(id, change(current));
      // Nothing changes: no write, and the ETag stays.
      if (sameAddress(address, current)) return { address: current, etag: entry.value.etag };
      const stored = await replace(
        entry as Deno.KvEntry<AddressRecord>,
        address,
        "updated",
        options,
      );
      if (stored) return stored;
    }
  }

  /**
   * Deletes the owner's address; its count goes down unless the Idempotency-Key that created it
   * is still kept: that record then becomes an orphan and holds the quota unit until it is swept.
   */
  async function remove(
    owner: string,
    id: number,
    expected?: Precondition,
    options: WriteOptions = {},
  ): Promise<void> {
    for (;;) {
      const [entry, count] = await readWith<Deno.KvU64>(id, countKey(owner));
      if (entry.value === null || entry.value.owner !== owner) throw notFound(id);
      checkExpected(expected, entry.value.etag, id);
      const op = new WriteRecorder();
      guard.check(op).check(entry).delete(addressKey(id)).delete(ownerKey(owner, id));
      const keyHolds = await orphanKeyOf(kv, op, entry as Deno.KvEntry<AddressRecord>);
      const left = countOf(count) - (keyHolds ? 0 : 1);
      // The count is summed, unchecked, with a quota or without: a deletion only lowers it, so it
      // cannot pass the quota, and a creation that checks the count sees the sum. Checked, every
      // deletion of the owner in flight would conflict with the others on it and be retried, each
      // paying for about as many commits as deletions in flight. Only a deletion that takes it to
      // 0 checks it, and deletes the key, so an owner with nothing stored leaves no key behind.
      if (left > 0) addToCount(op, owner, left - countOf(count));
      else setCount(op.check(count), owner, left);
      options.wanted?.();
      const result = await log.commit(op.prepare([{ owner, change: { type: "deleted", id } }]));
      if (result.ok) return;
      await guard.afterConflict();
    }
  }

  async function list(
    owner: string,
    { limit, cursor }: { limit: number; cursor?: string | undefined },
  ): Promise<AddressPage> {
    const after = cursor === undefined ? 0 : await tokens.position(owner, cursor);
    const items: StoredAddress[] = [];
    const last = await pages.page(owner, after, limit, (entries) => {
      for (const e of entries) items.push(e.value);
    });
    return { items, nextCursor: last === null ? null : await tokens.after(owner, last) };
  }

  async function listBatches(
    owner: string,
    { limit, cursor }: { limit: number; cursor?: string | undefined },
    take: (addresses: Address[]) => void,
  ): Promise<string | null> {
    const after = cursor === undefined ? 0 : await tokens.position(owner, cursor);
    const last = await pages.page(
      owner,
      after,
      limit,
      (entries) => take(entries.map((e) => e.value.address)),
    );
    return last === null ? null : await tokens.after(owner, last);
  }

  // Every method takes the owner first; a KV key holds at most 2048 bytes, so an owner that
  // could not be part of one is refused before any KV call could fail with a TypeError. KV
  // encodes key strings as UTF-8, replacing a lone surrogate with U+FFFD, so an owner that is not
  // well-formed Unicode would share another owner's keys: refused too (the gate refuses such a
  // sub already; this keeps the store safe on its own).
  const owned =
    <A extends unknown[], R>(method: (owner: string, ...rest: A) => Promise<R>) =>
    (owner: string, ...rest: A): Promise<R> => {
      const refused = ownerRefused(owner);
      return refused ? Promise.reject(refused) : method(owner, ...rest);
    };
  return {
    create: owned(create),
    get: owned(get),
    put: owned(put),
    putAt: owned(putAt),
    patch: owned(patch),
    delete: owned(remove),
    list: owned(list),
    listBatches: owned(listBatches),
    cursorsAfter: owned((owner, ids: readonly number[]) => tokens.afterEach(owner, ids)),
    exportAll: async function* (owner) {
      const refused = ownerRefused(owner);
      if (refused) throw refused;
      yield* ownerAddresses(pages, owner);
    },
    erase: owned((owner) => eraseOwner(kv, guard, log, owner)),
  };
}
