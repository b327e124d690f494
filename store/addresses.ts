import { AppError } from "../lib/errors.ts";
import type { Address, AddressInput } from "../lib/schemas.ts";
import {
  type AddressStoreOptions,
  type Created,
  createIdAllocator,
  notePutAt,
  readIdState,
  sameInput,
} from "./address_ids.ts";
import {
  addressKey,
  type AddressRecord,
  decodeCursor,
  encodeCursor,
  ownerKey,
  ownerPrefix,
} from "./address_keys.ts";
import { withKvRetry } from "./kv_retry.ts";

export type { AddressStoreOptions, Created };
export { decodeCursor, encodeCursor };

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
 * the caller (ids stay global). Every method may throw AppError (404, 409, 412, 422, 503).
 */
export interface AddressStore {
  /** Creates with a new id; with an Idempotency-Key, a repeat replays the first creation. */
  create(owner: string, input: AddressInput, idempotencyKey?: string): Promise<Created>;
  get(owner: string, id: number): Promise<StoredAddress | undefined>;
  /**
   * Version 1 PUT (spec 4.6): the owner's existing address gets city and postalCode (name kept);
   * otherwise the body is created with a new id.
   */
  put(
    owner: string,
    id: number,
    input: AddressInput,
    ifMatch?: readonly string[],
  ): Promise<StoredAddress & { created: boolean }>;
  /**
   * Version 2 PUT (RFC 9110): an absent id is created at that id, the owner's existing address
   * is replaced whole; an id another owner holds is 409 `id-taken`.
   */
  putAt(
    owner: string,
    id: number,
    input: AddressInput,
    ifMatch?: readonly string[],
  ): Promise<StoredAddress & { created: boolean }>;
  /** Changes the owner's address to what `change` makes of it (re-run on a concurrent write). */
  patch(
    owner: string,
    id: number,
    change: (current: Address) => AddressInput,
    ifMatch?: readonly string[],
  ): Promise<StoredAddress>;
  delete(owner: string, id: number, ifMatch?: readonly string[]): Promise<void>;
  list(
    owner: string,
    options: { limit: number; cursor?: string | undefined },
  ): Promise<AddressPage>;
}

/**
 * Longest owner: with 3 UTF-8 bytes per UTF-16 unit at most, `["idempotency", owner, key]` with
 * a 255-character key stays under KV's 2048-byte key limit.
 */
export const MAX_OWNER_LENGTH = 512;

/** If-Match semantics (RFC 9110 13.1.1): `*` matches any current version. */
function matches(ifMatch: readonly string[], versionstamp: string): boolean {
  return ifMatch.includes("*") || ifMatch.includes(versionstamp);
}

/** Throws 412 unless `ifMatch` is absent or matches the current version of address `id`. */
function checkIfMatch(ifMatch: readonly string[] | undefined, versionstamp: string, id: number) {
  if (ifMatch !== undefined && !matches(ifMatch, versionstamp)) throw preconditionFailed(id);
}

/** The address stored at `id` from an input (only its three members: nothing else is kept). */
function addressAt(id: number, input: AddressInput): Address {
  return { id, name: input.name, city: input.city, postalCode: input.postalCode };
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
  const { allocate } = createIdAllocator(kv, options);
  // Keyed creations running in this process, so a duplicate waits for the first and replays it.
  const running = new Map<string, { input: AddressInput; done: Promise<Created> }>();

  async function create(owner: string, input: AddressInput, key?: string): Promise<Created> {
    if (key === undefined) return await allocate(owner, input);
    const slot = JSON.stringify([owner, key]);
    for (let first = running.get(slot); first !== undefined; first = running.get(slot)) {
      if (!sameInput(first.input, input)) {
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
    const result = await withKvRetry(() =>
      kv.atomic().check(entry).set(entry.key, { owner, address })
        .set(ownerKey(owner, address.id), address).commit()
    );
    return result.ok ? { address, versionstamp: result.versionstamp } : null;
  }

  async function put(owner: string, id: number, input: AddressInput, ifMatch?: readonly string[]) {
    for (;;) {
      const entry = await read(id);
      if (entry.value === null || entry.value.owner !== owner) {
        if (ifMatch !== undefined) throw preconditionFailed(id);
        // Spec 4.6 rule 2: stored as new with a generated id (also when another owner holds id).
        return { ...(await create(owner, input)), created: true };
      }
      checkIfMatch(ifMatch, entry.versionstamp, id);
      const updated = { ...entry.value.address, city: input.city, postalCode: input.postalCode };
      const stored = await replace(entry as Deno.KvEntry<AddressRecord>, updated);
      if (stored) return { ...stored, created: false };
      // Changed or deleted between read and write: with If-Match that is the client's conflict,
      // without it the latest state decides again.
      if (ifMatch !== undefined) throw preconditionFailed(id);
    }
  }

  async function putAt(
    owner: string,
    id: number,
    input: AddressInput,
    ifMatch?: readonly string[],
  ) {
    const address = addressAt(id, input);
    for (;;) {
      const entry = await read(id);
      if (entry.value !== null) {
        if (entry.value.owner !== owner) {
          // Another owner's address is absent for this caller: If-Match on it cannot match.
          if (ifMatch !== undefined) throw preconditionFailed(id);
          throw new AppError("id-taken", `Address id ${id} is not available.`);
        }
        checkIfMatch(ifMatch, entry.versionstamp, id);
        const stored = await replace(entry as Deno.KvEntry<AddressRecord>, address);
        if (stored) return { ...stored, created: false };
        if (ifMatch !== undefined) throw preconditionFailed(id);
        continue;
      }
      if (ifMatch !== undefined) throw preconditionFailed(id);
      const op = kv.atomic().check({ key: addressKey(id), versionstamp: null })
        .set(addressKey(id), { owner, address } satisfies AddressRecord)
        .set(ownerKey(owner, id), address);
      notePutAt(op, await readIdState(kv), id);
      const result = await withKvRetry(() => op.commit());
      if (result.ok) return { address, versionstamp: result.versionstamp, created: true };
    }
  }

  async function patch(
    owner: string,
    id: number,
    change: (current: Address) => AddressInput,
    ifMatch?: readonly string[],
  ): Promise<StoredAddress> {
    for (;;) {
      const entry = await read(id);
      if (entry.value === null || entry.value.owner !== owner) throw notFound(id);
      checkIfMatch(ifMatch, entry.versionstamp, id);
      const current = entry.value.address;
      const address = addressAt(id, change(current));
      // Nothing changes: no write, and the ETag stays.
      if (sameInput(address, current)) {
        return { address: current, versionstamp: entry.versionstamp };
      }
      const stored = await replace(entry as Deno.KvEntry<AddressRecord>, address);
      if (stored) return stored;
      if (ifMatch !== undefined) throw preconditionFailed(id);
    }
  }

  async function remove(owner: string, id: number, ifMatch?: readonly string[]): Promise<void> {
    for (;;) {
      const entry = await read(id);
      if (entry.value === null || entry.value.owner !== owner) throw notFound(id);
      checkIfMatch(ifMatch, entry.versionstamp, id);
      const result = await withKvRetry(() =>
        kv.atomic().check(entry).delete(addressKey(id)).delete(ownerKey(owner, id)).commit()
      );
      if (result.ok) return;
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
      if (owner.length > MAX_OWNER_LENGTH) {
        return Promise.reject(
          new AppError(
            "forbidden",
            `An owner (the token's sub) has at most ${MAX_OWNER_LENGTH} characters.`,
          ),
        );
      }
      if (!owner.isWellFormed()) {
        return Promise.reject(
          new AppError("forbidden", "An owner (the token's sub) must be well-formed Unicode."),
        );
      }
      return method(owner, ...rest);
    };
  return {
    create: owned(create),
    get: owned(get),
    put: owned(put),
    putAt: owned(putAt),
    patch: owned(patch),
    delete: owned(remove),
    list: owned(list),
  };
}
