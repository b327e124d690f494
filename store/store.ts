import type { Book } from "../lib/schemas.ts";
import {
  type AddressStore,
  type AddressStoreOptions,
  openAddressStore,
} from "./addresses/repository.ts";
import { type BookStore, openBookStore } from "./books.ts";
import { type MigrationProgressEvent, openLayout } from "./layout/migrate.ts";
import { pageTokens } from "./addresses/page_tokens.ts";

/** Everything the protocol edges need from storage. */
export interface Store {
  books: BookStore;
  addresses: AddressStore;
  /** Resolves when KV answers a read and still has the layout this process opened (readiness). */
  ping(): Promise<void>;
}

/** How to open the store. */
interface StoreOptions {
  seedBooks: readonly Book[];
  addresses?: Omit<AddressStoreOptions, "guard" | "pageTokens">;
  /** `MIGRATE_ON_START`: migrate an older layout instead of refusing to start. */
  migrateOnStart?: boolean;
  /** How messages name the KV (never a URL: it may carry a token). */
  label?: string;
  /** Called after each migrated batch when `migrateOnStart` migrates. */
  onMigration?: (event: MigrationProgressEvent) => void;
}

/**
 * Opens the whole store on a KV handle: checks the layout (store/layout/layout.ts; a fresh KV is
 * initialised, an older one migrated only with `migrateOnStart`, a newer one refused) before
 * anything is written, then seeds and loads the catalogue and opens the address book, whose
 * every write checks that the layout is still the one opened here.
 */
export async function openStore(kv: Deno.Kv, options: StoreOptions): Promise<Store> {
  const guard = await openLayout(kv, options.label ?? "kv", {
    migrateOnStart: options.migrateOnStart ?? false,
    onProgress: options.onMigration,
  });
  const books = await openBookStore(kv, options.seedBooks);
  // The page tokens' key is read (or made, once per KV) now, so a listing does not wait for it;
  // storage that cannot take the write yet leaves it to the first listing that needs it.
  const tokens = pageTokens(kv);
  await tokens.ready().catch(() => {});
  const addresses = openAddressStore(kv, { ...options.addresses, guard, pageTokens: tokens });
  return {
    books,
    addresses,
    ping: async () => {
      await kv.get(["catalogue", "seeded"]);
      await guard.afterConflict();
    },
  };
}
