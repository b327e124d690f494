import { AppError } from "../lib/errors.ts";
import {
  type Address,
  addressAt,
  type AddressInput,
  replaceV1,
  sameAddress,
} from "../lib/address.ts";
import {
  type AddressStoreOptions,
  type Created,
  createIdAllocator,
  notePutAt,
  readIdState,
} from "./address_ids.ts";
import {
  addressKey,
  type AddressRecord,
  countKey,
  decodeCursor,
  encodeCursor,
  idempotencyKey,
  type IdempotencyRecord,
  isExpired,
  ownerKey,
  ownerPrefix,
  RECORD_VERSION,
} from "./address_keys.ts";
import { withKvRetry } from "./kv/retry.ts";
import { NO_GUARD } from "./layout/layout.ts";
import {
  countOf,
  createKeySweeper,
  DEFAULT_MAX_PER_OWNER,
  quotaExceeded,
  setCount,
} from "./owner_counts.ts";
import { eraseOwner, ownerAddresses } from "./owner_data.ts";

export type { AddressStoreOptions, Created };
export { decodeCursor, encodeCursor };

/**
 * The condition of a conditional write: given the versionstamp of the address as stored, true
 * when the write may go ahead. Absent: the write is unconditional.
 */
export type Precondition = (versionstamp: string) => boolean;

/** An address together with the KV versionstamp of the stored record (used as ETag). */
export interface StoredAddress {
  address: Address;
  versionstamp: string;
}

/** One page of a listing. */
export interface AddressPage {
  items: StoredAddress[];
  nextCursor: string | null;
}

/**
 * The address book. Every address belongs to an owner; another owner's address is absent for
 * the caller (ids stay global). Every method may throw AppError (404, 409, 412, 422, 503). A
 * write given a precondition is 412 `precondition-failed` unless the address exists for the
 * owner and the precondition accepts its version.
 */
export interface AddressStore {
  /** Creates with a new id; with an Idempotency-Key, a repeat replays the first creation. */
  create(owner: string, input: AddressInput, idempotencyKey?: string): Promise<Created>;
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
  ): Promise<StoredAddress>;
  delete(owner: string, id: number, expected?: Precondition): Promise<void>;
  list(
    owner: string,
    options: { limit: number; cursor?: string | undefined },
  ): Promise<AddressPage>;
  /** Every address of the owner by ascending id, read a page at a time as it is consumed. */
  exportAll(owner: string): AsyncGenerator<Address, void, undefined>;
  /**
   * Deletes every address and Idempotency-Key record of the owner (and their count), in bounded
   * atomic batches; returns how many addresses it deleted. Repeating it finds nothing.
   */
  erase(owner: string): Promise<number>;
}

/**
 * Longest owner: with 3 UTF-8 bytes per UTF-16 unit at most, `["idempotency", owner, key]` with
 * a 255-character key stays under KV's 2048-byte key limit.
 */
export const MAX_OWNER_LENGTH = 512;

/** The 403 for an owner too long to be part of a KV key; undefined for any other. */
function ownerRefused(owner: string): AppError | undefined {
  if (owner.length > MAX_OWNER_LENGTH) {
    return new AppError(
      "forbidden",
      `An owner (the token's sub) has at most ${MAX_OWNER_LENGTH} characters.`,
    );
  }
  // KV encodes key strings as UTF-8: a lone surrogate would become U+FFFD, another owner's key.
  if (!owner.isWellFormed()) {
    return new AppError("forbidden", "An owner (the token's sub) must be well-formed Unicode.");
  }
  return undefined;
}

/** Throws 412 unless `expected` is absent or accepts the current version of address `id`. */
function checkExpected(expected: Precondition | undefined, versionstamp: string, id: number) {
  if (expected !== undefined && !expected(versionstamp)) throw preconditionFailed(id);
}

function preconditionFailed(id: number): AppError {
  return new AppError(
    "precondition-failed",
    `If-Match does not match the current version of address ${id}.`,
  );
}

function notFound(id: number): AppError {
  return new AppError("address-not-found", `No address has id ${id}.`);
}

/**
 * Opens the address book on a KV handle (see address_keys.ts for the layout and address_ids.ts
 * for how ids are allocated). Every write of an address sets its record and its owner-index entry
 * in one atomic operation that checks the record, so the two never disagree.
 */
export function openAddressStore(kv: Deno.Kv, options: AddressStoreOptions = {}): AddressStore {
  const guard = options.guard ?? NO_GUARD;
  const maxPerOwner = options.maxPerOwner ?? DEFAULT_MAX_PER_OWNER;
  const sweeper = createKeySweeper(kv, guard);
  const { allocate } = createIdAllocator(kv, options, sweeper);
  // Keyed creations running in this process, so a duplicate waits for the first and replays it.
  const running = new Map<string, { input: AddressInput; done: Promise<Created> }>();

  async function create(owner: string, input: AddressInput, key?: string): Promise<Created> {
    if (key === undefined) return await allocate(owner, input);
    const slot = JSON.stringify([owner, key]);
    for (let first = running.get(slot); first !== undefined; first = running.get(slot)) {
      if (!sameAddress(first.input, input)) {
        throw new AppError(
          "request-in-progress",
          "A request with this Idempotency-Key and another body is still in progress.",
        );
      }
      try {
        return { ...(await first.done), replayed: true };
      } catch {
        // The first attempt failed and stored nothing: this request tries itself.
      }
    }
    const done = allocate(owner, input, key);
    running.set(slot, { input, done });
    try {
      return await done;
    } finally {
      running.delete(slot);
    }
  }

  function read(id: number) {
    return withKvRetry(() => kv.get<AddressRecord>(addressKey(id)));
  }

  async function get(owner: string, id: number): Promise<StoredAddress | undefined> {
    const entry = await read(id);
    return entry.value === null || entry.value.owner !== owner
      ? undefined
      : { address: entry.value.address, versionstamp: entry.versionstamp };
  }

  /** Replaces the owner's address in `entry` with `address`; null when `entry` is stale. */
  async function replace(
    entry: Deno.KvEntry<AddressRecord>,
    address: Address,
  ): Promise<StoredAddress | null> {
    const { owner } = entry.value;
    const record: AddressRecord = { ...entry.value, v: RECORD_VERSION, address };
    const result = await withKvRetry(() =>
      guard.check(kv.atomic()).check(entry).set(entry.key, record)
        .set(ownerKey(owner, address.id), address).commit()
    );
    if (result.ok) return { address, versionstamp: result.versionstamp };
    await guard.afterConflict();
    return null;
  }

  /** Reads the owner's count; past the quota, sweeps expired keys once, then refuses. */
  async function countForCreate(owner: string): Promise<Deno.KvEntryMaybe<Deno.KvU64>> {
    for (let swept = false;; swept = true) {
      const count = await withKvRetry(() => kv.get<Deno.KvU64>(countKey(owner)));
      if (countOf(count) < maxPerOwner) return count;
      if (swept || await sweeper.maybeSweep(owner) === 0) throw quotaExceeded(maxPerOwner);
    }
  }

  async function put(owner: string, id: number, input: AddressInput, expected?: Precondition) {
    for (;;) {
      const entry = await read(id);
      if (entry.value === null || entry.value.owner !== owner) {
        if (expected !== undefined) throw preconditionFailed(id);
        // Spec 4.6 rule 2: stored as new with a generated id (also when another owner holds id).
        return { ...(await create(owner, input)), created: true };
      }
      checkExpected(expected, entry.versionstamp, id);
      const updated = replaceV1(entry.value.address, input);
      const stored = await replace(entry as Deno.KvEntry<AddressRecord>, updated);
      if (stored) return { ...stored, created: false };
      // Changed or deleted between read and write: with a precondition that is the client's
      // conflict, without one the latest state decides again.
      if (expected !== undefined) throw preconditionFailed(id);
    }
  }

  async function putAt(
    owner: string,
    id: number,
    input: AddressInput,
    expected?: Precondition,
  ) {
    const address = addressAt(id, input);
    for (;;) {
      const entry = await read(id);
      if (entry.value !== null) {
        if (entry.value.owner !== owner) {
          // Another owner's address is absent for this caller: a precondition cannot hold.
          if (expected !== undefined) throw preconditionFailed(id);
          throw new AppError("id-taken", `Address id ${id} is not available.`);
        }
        checkExpected(expected, entry.versionstamp, id);
        const stored = await replace(entry as Deno.KvEntry<AddressRecord>, address);
        if (stored) return { ...stored, created: false };
        if (expected !== undefined) throw preconditionFailed(id);
        continue;
      }
      if (expected !== undefined) throw preconditionFailed(id);
      const count = await countForCreate(owner);
      const record: AddressRecord = { v: RECORD_VERSION, owner, address };
      const op = guard.check(kv.atomic()).check({ key: addressKey(id), versionstamp: null })
        .check(count)
        .set(addressKey(id), record)
        .set(ownerKey(owner, id), address);
      setCount(op, owner, countOf(count) + 1);
      notePutAt(op, await readIdState(kv), id);
      const result = await withKvRetry(() => op.commit());
      if (result.ok) return { address, versionstamp: result.versionstamp, created: true };
      await guard.afterConflict();
    }
  }

  async function patch(
    owner: string,
    id: number,
    change: (current: Address) => AddressInput,
    expected?: Precondition,
  ): Promise<StoredAddress> {
    for (;;) {
      const entry = await read(id);
      if (entry.value === null || entry.value.owner !== owner) throw notFound(id);
      checkExpected(expected, entry.versionstamp, id);
      const current = entry.value.address;
      const address = addressAt(id, change(current));
      // Nothing changes: no write, and the ETag stays.
      if (sameAddress(address, current)) {
        return { address: current, versionstamp: entry.versionstamp };
      }
      const stored = await replace(entry as Deno.KvEntry<AddressRecord>, address);
      if (stored) return stored;
      if (expected !== undefined) throw preconditionFailed(id);
    }
  }

  /**
   * Deletes the owner's address; its count goes down unless the Idempotency-Key that created it
   * is still kept: that record then becomes an orphan and holds the quota unit until it is swept.
   */
  async function remove(owner: string, id: number, expected?: Precondition): Promise<void> {
    for (;;) {
      const [entry, count] = await withKvRetry(() =>
        kv.getMany<[AddressRecord, Deno.KvU64]>([addressKey(id), countKey(owner)])
      );
      if (entry.value === null || entry.value.owner !== owner) throw notFound(id);
      checkExpected(expected, entry.versionstamp, id);
      const op = guard.check(kv.atomic()).check(entry).check(count)
        .delete(addressKey(id)).delete(ownerKey(owner, id));
      let released = 1;
      if (entry.value.key !== undefined) {
        const keyed = await withKvRetry(() =>
          kv.get<IdempotencyRecord>(idempotencyKey(owner, entry.value!.key!))
        );
        const kept = keyed.value;
        if (kept !== null && kept.address.id === id && !kept.orphan) {
          op.check(keyed);
          if (isExpired(kept, Date.now())) op.delete(keyed.key);
          else {
            // Kept without expiry: only a sweep may delete it, giving the unit back.
            const orphan: IdempotencyRecord = {
              ...kept,
              orphan: true,
              versionstamp: kept.versionstamp ?? keyed.versionstamp,
            };
            op.set(keyed.key, orphan);
            released = 0;
          }
        }
      }
      setCount(op, owner, countOf(count) - released);
      const result = await withKvRetry(() => op.commit());
      if (result.ok) return;
      await guard.afterConflict();
    }
  }

  async function list(
    owner: string,
    { limit, cursor }: { limit: number; cursor?: string | undefined },
  ): Promise<AddressPage> {
    const after = cursor === undefined ? 0 : decodeCursor(cursor);
    const items: StoredAddress[] = [];
    const prefix = ownerPrefix(owner);
    const selector = after > 0 ? { prefix, start: ownerKey(owner, after + 1) } : { prefix };
    await withKvRetry(async () => {
      items.length = 0;
      for await (const e of kv.list<Address>(selector, { limit: limit + 1 })) {
        items.push({ address: e.value, versionstamp: e.versionstamp });
      }
    });
    const more = items.length > limit;
    if (more) items.length = limit;
    return { items, nextCursor: more ? encodeCursor(items[items.length - 1]!.address.id) : null };
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
    exportAll: async function* (owner) {
      const refused = ownerRefused(owner);
      if (refused) throw refused;
      yield* ownerAddresses(kv, owner);
    },
    erase: owned((owner) => eraseOwner(kv, guard, owner)),
  };
}
