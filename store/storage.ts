import type { Logger } from "../lib/log.ts";
import type { Book } from "../lib/schemas.ts";
import { isKvFile, openKv } from "./kv/open.ts";
import { explainKvWait } from "./kv/locks.ts";
import { guardStorage, type StorageHealth } from "./kv/storage_health.ts";
import { openStore, type Store } from "./store.ts";

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
  try {
    const guarded = await guardStorage(options.wrapKv?.(kv) ?? kv, { logger, label, file });
    storage = guarded.health;
    const store = await openStore(guarded.kv, {
      seedBooks: options.seedBooks,
      label,
      migrateOnStart: options.migrateOnStart,
      addresses: { maxPerOwner: options.maxAddressesPerOwner },
      onMigration: (e) => {
        if (e.done) logger.info("storage migrated", { from: e.from, to: e.to });
      },
    });
    return { kv, store, storage };
  } catch (error) {
    await storage?.close();
    kv.close();
    throw error;
  } finally {
    wait?.done();
  }
}
