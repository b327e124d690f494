import type { Book } from "../lib/schemas.ts";
import {
  type AddressStore,
  type AddressStoreOptions,
  openAddressStore,
} from "./addresses/repository.ts";
import { type BookStore, openBookStore } from "./books.ts";
import { type MigrationProgressEvent, openLayout } from "./layout/migrate.ts";
import { pageTokens } from "./addresses/page_tokens.ts";
import { DEFAULT_RETENTION_MS, openChangeLog } from "./addresses/change_log.ts";
import { type AddressFeed, feedTokens, openAddressFeed } from "./addresses/feed.ts";
import { NO_GUARD } from "./layout/layout.ts";

/** Everything the protocol edges need from storage. */
export interface Store {
  books: BookStore;
  addresses: AddressStore;
  /** Live updates: every owner's changes, as the address book's writes commit them. */
  feed: AddressFeed;
  /** Resolves when KV answers a read and still has the layout this process opened (readiness). */
  ping(): Promise<void>;
}

/** How to open the store. */
interface StoreOptions {
  seedBooks: readonly Book[];
  addresses?: Omit<AddressStoreOptions, "guard" | "pageTokens" | "changeLog">;
  /** `MIGRATE_ON_START`: migrate an older layout instead of refusing to start. */
  migrateOnStart?: boolean;
  /** How messages name the KV (never a URL: it may carry a token). */
  label?: string;
  /** Called after each migrated batch when `migrateOnStart` migrates. */
  onMigration?: (event: MigrationProgressEvent) => void;
  /** The change feed's retention and stream limits (`EVENTS_*`). */
  events?: EventsOptions;
}

/** The change feed's settings. */
export interface EventsOptions {
  retentionMs: number;
  maxStreams: number;
  maxStreamsPerCaller: number;
}

const DEFAULT_EVENTS: EventsOptions = {
  retentionMs: DEFAULT_RETENTION_MS,
  maxStreams: 1000,
  maxStreamsPerCaller: 10,
};

/**
 * How often a process with open streams reads the change clock for other processes' commits:
 * on a KV file `watch` sees only this process's own (tests/store/change_log_test.ts shows it),
 * and other processes write there too (the gRPC child, `deno serve --parallel`, a second server,
 * the import tool). One small read per interval, whatever the number of streams.
 */
const POLL_MS = 200;

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
  const events = options.events ?? DEFAULT_EVENTS;
  // One per process: every write of the address book commits through it, with its changes.
  const log = openChangeLog(kv, { retentionMs: events.retentionMs, guard: NO_GUARD.check });
  const addresses = openAddressStore(kv, {
    ...options.addresses,
    guard,
    pageTokens: tokens,
    changeLog: log,
  });
  const feed = openAddressFeed(kv, {
    log,
    tokens: feedTokens(kv),
    retentionMs: events.retentionMs,
    maxStreams: events.maxStreams,
    maxStreamsPerCaller: events.maxStreamsPerCaller,
    pollMs: POLL_MS,
  });
  return {
    books,
    addresses,
    feed,
    ping: async () => {
      await kv.get(["catalogue", "seeded"]);
      await guard.afterConflict();
    },
  };
}
