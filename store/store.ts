import type { Book } from "../lib/schemas.ts";
import { type AddressStore, type AddressStoreOptions, openAddressStore } from "./addresses.ts";
import { migrateUnownedAddresses } from "./address_owners.ts";
import { type BookStore, openBookStore } from "./books.ts";

/** Everything the protocol edges need from storage. */
export interface Store {
  books: BookStore;
  addresses: AddressStore;
  /** Resolves when KV answers a read; used by readiness. */
  ping(): Promise<void>;
}

/**
 * Opens the whole store on a KV handle: seeds and loads the catalogue, gives addresses stored
 * before ownership existed to the anonymous owner, opens the address book.
 */
export async function openStore(
  kv: Deno.Kv,
  options: { seedBooks: readonly Book[]; addresses?: AddressStoreOptions },
): Promise<Store> {
  const books = await openBookStore(kv, options.seedBooks);
  await migrateUnownedAddresses(kv);
  const addresses = openAddressStore(kv, options.addresses);
  return {
    books,
    addresses,
    ping: async () => {
      await kv.get(["catalogue", "seeded"]);
    },
  };
}
