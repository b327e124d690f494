/** Stores for in-process tests of the HTTP side: a catalogue, and an address book that fails. */
import type { Store } from "../../store/store.ts";

/**
 * A store over `books` whose every address-book call answers `address()` (a failure, or nothing
 * at all), and whose readiness probe answers `ping()`.
 */
export function stubStore(
  books: Store["books"],
  address: () => Promise<never>,
  ping: () => Promise<void> = () => Promise.resolve(),
): Store {
  return {
    books,
    addresses: {
      create: address,
      get: address,
      put: address,
      putAt: address,
      patch: address,
      delete: address,
      list: address,
      listBatches: address,
      cursorsAfter: address,
      exportAll: async function* () {
        await address();
        yield* [];
      },
      erase: address,
    },
    feed: { open: address, closeAll: () => {}, size: 0 },
    ping,
  };
}
