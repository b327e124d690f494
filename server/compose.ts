import type { Config } from "../lib/config.ts";
import type { Logger } from "../lib/log.ts";
import type { CacheStats } from "../lib/cache_bytes.ts";
import { createApp } from "./app.ts";
import type { Handler, Inner } from "./handler.ts";
import { httpEntry } from "./entry.ts";
import { withVaryOrigin } from "./cors.ts";
import { createRefusals } from "./refusals.ts";
import { createGraphqlCaches } from "../graphql/caches.ts";
import { accessRules, type Gate, openGate } from "../security/gate.ts";
import type { Identity } from "../security/verifier.ts";
import { createTokenCache } from "../security/token_cache.ts";
import { DEFAULT_BOOKS, readCatalogue } from "../store/kv/open.ts";
import { kvLabel } from "../store/kv/label.ts";
import { openStorage } from "../store/storage.ts";
import type { BookStore } from "../store/books.ts";
import type { AddressFeed } from "../store/addresses/feed.ts";
import type { AddressStore } from "../store/addresses/repository.ts";
import type { StorageHealth } from "../store/kv/storage_health.ts";

/** The caches of the HTTP side. */
export interface EdgeCaches {
  graphqlDocuments: CacheStats;
  graphqlResults: CacheStats;
  /** Verified tokens; undefined when authentication is off. */
  tokens: CacheStats | undefined;
}

/** The HTTP edge over an open store: the handler and what it holds. */
interface Edge {
  /** The whole HTTP side: the entry, then the app (or the refusals). */
  handler: Handler;
  books: BookStore;
  /** The address book (an inline gRPC listener serves it too). */
  addresses: AddressStore;
  /** Its live updates (ended at shutdown, so the listeners can drain). */
  feed: AddressFeed;
  /** Authentication and rate limits, when configured (the gRPC listener uses it too). */
  gate: Gate | undefined;
  /** The KV handle as opened (closed last). */
  kv: Deno.Kv;
  caches: EdgeCaches;
  /** Whether writes work and the KV file is the one opened (readiness). */
  storage: StorageHealth;
}

/**
 * Opens storage and composes the HTTP edge. `isListening` and `isShuttingDown` feed readiness:
 * the process that owns the listeners knows when they serve.
 */
export async function openEdge(
  config: Config,
  logger: Logger,
  state: { isListening: () => boolean; isShuttingDown: () => boolean },
  options: { wrapKv?: ((kv: Deno.Kv) => Deno.Kv) | undefined } = {},
): Promise<Edge> {
  const seedBooks = await readCatalogue(config.booksFile ?? DEFAULT_BOOKS);
  // Before the KV: a JWKS file that cannot be read stops start-up with nothing to close.
  const tokens = createTokenCache<Identity>();
  const gate = await openGate(config, { tokenCache: tokens });
  const { kv, store, storage } = await openStorage({
    path: config.kvPlatform ? undefined : config.kvPath,
    label: kvLabel(config),
    seedBooks,
    migrateOnStart: config.migrateOnStart,
    maxAddressesPerOwner: config.maxAddressesPerOwner,
    events: config.events,
    logger,
    wrapKv: options.wrapKv,
  });
  if (config.auth === undefined) {
    logger.warn("authentication is off: the address book is open to anyone", {
      hint: "set AUTH_JWT_SECRET, AUTH_JWKS_FILE or AUTH_JWKS_URL",
    });
  }
  const graphqlCaches = createGraphqlCaches();
  const access = accessRules(config.auth);
  const app = createApp({
    store,
    logger,
    maxBodyBytes: config.maxBodyBytes,
    isShuttingDown: state.isShuttingDown,
    isListening: state.isListening,
    storage,
    graphql: config.graphql,
    graphqlCaches,
    access,
    corsOrigins: config.corsOrigins,
    publicUrl: config.publicUrl,
    events: { heartbeatMs: config.events.heartbeatMs },
  });
  const books = store.books;
  const appFetch: Inner = (request, admission) => app.fetch(request, admission);
  const cors = config.corsOrigins !== undefined;
  const entry = httpEntry({
    gate,
    router: app.router,
    logger,
    app: appFetch,
    refusals: createRefusals({
      router: app.router,
      logger,
      publicUrl: config.publicUrl,
      corsOrigins: config.corsOrigins,
    }),
  });
  // Decided once: only with CORS on does every answer say that it varies by Origin.
  const handler = cors ? withVaryOrigin(entry) : entry;
  const caches = {
    graphqlDocuments: graphqlCaches.stats.documents,
    graphqlResults: graphqlCaches.stats.results,
    tokens: config.auth === undefined ? undefined : tokens,
  };
  return {
    handler,
    books,
    addresses: store.addresses,
    feed: store.feed,
    gate,
    kv,
    caches,
    storage,
  };
}
