import type { Logger } from "../lib/log.ts";
import type { Book } from "../lib/schemas.ts";
import { isKvFile, openKv } from "./kv/open.ts";
import { LOCAL_READS_AT_ONCE, REMOTE_READS_AT_ONCE } from "./kv/read.ts";
import { explainKvWait } from "./kv/locks.ts";
import { guardStorage, type StorageHealth } from "./kv/storage_health.ts";
import { type EventsOptions, openStore, type Store } from "./store.ts";
import { openWriteLock, type WriteLock } from "./kv/write_lock.ts";

/** What a server opens: the KV handle (closed last), the store over it, and its health. */
interface Storage {
  kv: Deno.Kv;
  store: Store;
  /** Whether writes work and the KV file is the one opened (readiness). */
  storage: StorageHealth;
}

/**
 * Opens the KV a server runs on and the store over it: says who holds the file's lock while
 * opening waits for it, puts the storage guard (faults as `storage-unavailable`, the file's
 * identity watched) under the store, then seeds, checks the layout and opens the address book.
 */
export async function openStorage(options: {
  /** A file path, `:memory:`, a KV Connect URL, or undefined for the platform's KV. */
  path: string | undefined;
  /** How logs name the KV (never a URL). */
  label: string;
  seedBooks: readonly Book[];
  migrateOnStart: boolean;
  maxAddressesPerOwner: number;
  /** The change feed's retention and stream limits; absent: the defaults. */
  events?: EventsOptions | undefined;
  logger: Logger;
  /** Wraps the handle under everything else, the way a failing disk would sit under it (tests). */
  wrapKv?: ((kv: Deno.Kv) => Deno.Kv) | undefined;
}): Promise<Storage> {
  const { path, label, logger } = options;
  const file = isKvFile(path) ? path : undefined;
  // Opening waits without a word while another process holds a lock: say who holds it.
  const wait = file === undefined ? undefined : await explainKvWait(file, logger);
  let kv: Deno.Kv;
  try {
    kv = await openKv(path);
  } catch (error) {
    wait?.done();
    throw error;
  }
  let storage: StorageHealth | undefined;
  let writeLock: WriteLock | undefined;
  try {
    if (file !== undefined) writeLock = await openLockOrNone(file, label, logger);
    const guarded = await guardStorage(options.wrapKv?.(kv) ?? kv, {
      logger,
      label,
      file,
      writeLock,
    });
    storage = guarded.health;
    const store = await openStore(guarded.kv, {
      seedBooks: options.seedBooks,
      label,
      migrateOnStart: options.migrateOnStart,
      addresses: {
        maxPerOwner: options.maxAddressesPerOwner,
        readsAtOnce: file !== undefined || path === ":memory:"
          ? LOCAL_READS_AT_ONCE
          : REMOTE_READS_AT_ONCE,
      },
      events: options.events,
      onMigration: (e) => {
        if (e.done) logger.info("storage migrated", { from: e.from, to: e.to });
      },
    });
    return { kv, store, storage };
  } catch (error) {
    // The storage's close closes the lock too; without a storage it is closed here.
    if (storage !== undefined) await storage.close();
    else writeLock?.close();
    kv.close();
    throw error;
  } finally {
    wait?.done();
  }
}

/**
 * The KV file's write lock, or none when its file cannot be made (a directory that takes no new
 * file, a full disk): the lock only spares concurrent writers SQLite's polling, and a server whose
 * storage cannot take writes still serves reads (writes are answered `storage-unavailable`).
 */
async function openLockOrNone(
  file: string,
  label: string,
  logger: Logger,
): Promise<WriteLock | undefined> {
  try {
    return await openWriteLock(file);
  } catch (error) {
    logger.warn("kv write lock unavailable; concurrent writers poll", {
      kv: label,
      error: error instanceof Error ? error.message : String(error),
    });
    return undefined;
  }
}
