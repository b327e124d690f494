import { AppError } from "../lib/errors.ts";
import type { Address, AddressInput } from "../lib/schemas.ts";
import { backoffDelay, DEFAULT_RETRY, sleep, withKvRetry } from "./kv_retry.ts";

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

/** The address book. Every method may throw AppError (404, 412, 503). */
export interface AddressStore {
  create(input: AddressInput): Promise<StoredAddress>;
  get(id: number): Promise<StoredAddress | undefined>;
  /** Spec 4.6: existing → city and postalCode replaced (name kept); absent → created with a new id. */
  put(
    id: number,
    input: AddressInput,
    ifMatch?: readonly string[],
  ): Promise<StoredAddress & { created: boolean }>;
  delete(id: number, ifMatch?: readonly string[]): Promise<void>;
  list(options: { limit: number; cursor?: string | undefined }): Promise<AddressPage>;
}

/** Tuning of the group commit that allocates ids. */
export interface AddressStoreOptions {
  /** Most creations committed in one atomic operation (KV allows 1000 mutations). */
  maxBatch?: number;
  /** Conflicts on the counter (other processes) retried before giving up with 503. */
  maxConflicts?: number;
}

const COUNTER = ["counters", "addresses"] as const;
const PREFIX = "addresses";

function addressKey(id: number): Deno.KvKey {
  return [PREFIX, id];
}

interface Waiter {
  input: AddressInput;
  resolve(value: StoredAddress): void;
  reject(reason: unknown): void;
}

/**
 * Opens the address book on a KV handle.
 *
 * Ids come from one counter that only advances inside an atomic operation that checks it, so ids
 * stay unique when several processes share one KV. Creations waiting in this process are committed
 * together: one counter read and one atomic operation for the whole batch, instead of every request
 * racing for the counter. Each creation is answered only after its batch committed.
 */
export function openAddressStore(kv: Deno.Kv, options: AddressStoreOptions = {}): AddressStore {
  const maxBatch = options.maxBatch ?? 200;
  const maxConflicts = options.maxConflicts ?? 50;
  const queue: Waiter[] = [];
  let draining = false;

  async function commitBatch(batch: Waiter[]): Promise<void> {
    for (let conflicts = 0;; conflicts++) {
      const counter = await withKvRetry(() => kv.get<Deno.KvU64>(COUNTER));
      const last = counter.value === null ? 0 : Number(counter.value.value);
      const op = kv.atomic()
        .check({ key: COUNTER, versionstamp: counter.versionstamp })
        .set(COUNTER, new Deno.KvU64(BigInt(last + batch.length)));
      const addresses = batch.map((w, i) => ({ id: last + 1 + i, ...w.input }));
      for (const address of addresses) op.set(addressKey(address.id), address);
      const result = await withKvRetry(() => op.commit());
      if (result.ok) {
        batch.forEach((w, i) =>
          w.resolve({ address: addresses[i]!, versionstamp: result.versionstamp })
        );
        return;
      }
      if (conflicts + 1 >= maxConflicts) {
        throw new AppError("service-unavailable", "The id counter stayed contended.", {
          retryAfter: 1,
        });
      }
      await sleep(backoffDelay(Math.min(conflicts, 6), DEFAULT_RETRY));
    }
  }

  async function drain(): Promise<void> {
    draining = true;
    try {
      while (queue.length > 0) {
        const batch = queue.splice(0, maxBatch);
        try {
          await commitBatch(batch);
        } catch (error) {
          for (const w of batch) w.reject(error);
        }
      }
    } finally {
      draining = false;
    }
  }

  function create(input: AddressInput): Promise<StoredAddress> {
    return new Promise((resolve, reject) => {
      queue.push({
        input: { name: input.name, city: input.city, postalCode: input.postalCode },
        resolve,
        reject,
      });
      if (!draining) void drain();
    });
  }

  async function get(id: number): Promise<StoredAddress | undefined> {
    const entry = await withKvRetry(() => kv.get<Address>(addressKey(id)));
    return entry.value === null
      ? undefined
      : { address: entry.value, versionstamp: entry.versionstamp };
  }

  function preconditionFailed(id: number): AppError {
    return new AppError(
      "precondition-failed",
      `If-Match does not match the current version of address ${id}.`,
    );
  }

  async function put(id: number, input: AddressInput, ifMatch?: readonly string[]) {
    for (;;) {
      const entry = await withKvRetry(() => kv.get<Address>(addressKey(id)));
      if (entry.value === null) {
        if (ifMatch !== undefined) throw preconditionFailed(id);
        return { ...(await create(input)), created: true };
      }
      if (ifMatch !== undefined && !matches(ifMatch, entry.versionstamp)) {
        throw preconditionFailed(id);
      }
      const updated: Address = { ...entry.value, city: input.city, postalCode: input.postalCode };
      const result = await withKvRetry(() =>
        kv.atomic().check(entry).set(addressKey(id), updated).commit()
      );
      if (result.ok) return { address: updated, versionstamp: result.versionstamp, created: false };
      // Changed or deleted between read and write: with If-Match that is the client's conflict,
      // without it the latest state decides again.
      if (ifMatch !== undefined) throw preconditionFailed(id);
    }
  }

  async function remove(id: number, ifMatch?: readonly string[]): Promise<void> {
    for (;;) {
      const entry = await withKvRetry(() => kv.get<Address>(addressKey(id)));
      if (entry.value === null) throw new AppError("address-not-found", `No address has id ${id}.`);
      if (ifMatch !== undefined && !matches(ifMatch, entry.versionstamp)) {
        throw preconditionFailed(id);
      }
      const result = await withKvRetry(() =>
        kv.atomic().check(entry).delete(addressKey(id)).commit()
      );
      if (result.ok) return;
    }
  }

  async function list({ limit, cursor }: { limit: number; cursor?: string | undefined }) {
    const after = cursor === undefined ? 0 : decodeCursor(cursor);
    const items: StoredAddress[] = [];
    const selector = after > 0
      ? { prefix: [PREFIX], start: addressKey(after + 1) }
      : { prefix: [PREFIX] };
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

  return { create, get, put, delete: remove, list };
}

/** If-Match semantics (RFC 9110 13.1.1): `*` matches any current version. */
function matches(ifMatch: readonly string[], versionstamp: string): boolean {
  return ifMatch.includes("*") || ifMatch.includes(versionstamp);
}

/** Opaque page cursor: the last id of the page, base64url-encoded with a version tag. */
export function encodeCursor(lastId: number): string {
  return btoa(`a1:${lastId}`).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** Decodes a cursor from `encodeCursor`; anything else is a 400 `invalid-parameter`. */
export function decodeCursor(cursor: string): number {
  const invalid = new AppError(
    "invalid-parameter",
    "Query parameter cursor is not a cursor this server issued.",
  );
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(cursor)) throw invalid;
  let text: string;
  try {
    text = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    throw invalid;
  }
  const match = /^a1:([1-9][0-9]{0,15})$/.exec(text);
  const id = match ? Number(match[1]) : NaN;
  if (!Number.isSafeInteger(id)) throw invalid;
  return id;
}
