import type { Config } from "../lib/config.ts";
import { createLogger, type Logger } from "../lib/log.ts";
import { createApp } from "./app.ts";
import type { Handler, Inner } from "./handler.ts";
import { withHotReads } from "../routes/books_front.ts";
import { withCachedGraphql } from "../graphql/cached_front.ts";
import { httpEntry } from "./entry.ts";
import { withVaryOrigin } from "./cors.ts";
import { type Gate, openGate } from "../security/gate.ts";
import { createResultCache } from "../graphql/result_cache.ts";
import { createDocumentCache } from "../graphql/prepare.ts";
import { byteStats } from "../graphql/lru.ts";
import type { Identity } from "../security/verifier.ts";
import type { CacheStats } from "../lib/cache_bytes.ts";
import { createTokenCache } from "../security/token_cache.ts";
import { type GrpcListener, startGrpcListener } from "../rpc/listener/grpc_listener.ts";
import { startSupervisedGrpc } from "../rpc/process/grpc_supervisor.ts";
import { DEFAULT_BOOKS, openKv, readCatalogue } from "../store/kv/open.ts";
import { openStore, type Store } from "../store/store.ts";
import { kvLabel } from "../store/kv/label.ts";
import type { BookStore } from "../store/books.ts";
import { isKvFile } from "../store/kv/identity.ts";
import { explainKvWait } from "../store/kv/locks.ts";
import { guardStorage, type StorageHealth } from "../store/kv/storage_health.ts";
import { type HttpListener, listenHttp } from "./listener.ts";
import { openFilesLimit } from "../lib/proc.ts";

/** A started server: its bound URLs and a graceful stop. */
export interface RunningServer {
  /** Base URL of the HTTP listener, e.g. `http://127.0.0.1:8000`. */
  httpUrl: string;
  /** Base URL of the gRPC listener, or undefined when `GRPC_PORT=off`. */
  grpcUrl: string | undefined;
  /**
   * Stops accepting, finishes in-flight requests, closes KV. With `drainMs`, readiness turns 503
   * at once and the listeners keep serving that long first. Safe to call twice; a second call
   * ends a drain at once.
   */
  shutdown(options?: { drainMs?: number }): Promise<void>;
  /** What the HTTP side's caches hold, by their own accounting (each is bounded by bytes). */
  caches: EdgeCaches;
}

/** The caches of the HTTP side. */
export interface EdgeCaches {
  graphqlDocuments: CacheStats;
  graphqlResults: CacheStats;
  /** Verified tokens; undefined when authentication is off. */
  tokens: CacheStats | undefined;
}

/** What the process passes in besides the configuration. */
export interface ServerOptions {
  logger?: Logger;
  /**
   * Wraps the KV handle under everything else (the storage guard included), the way a failing
   * disk would sit under it: tests inject storage faults with it.
   */
  wrapKv?: (kv: Deno.Kv) => Deno.Kv;
}

/** The HTTP edge over an open store: the handler and what it holds. */
export interface Edge {
  /** The whole HTTP side: answers in front of the router, then the app. */
  handler: Handler;
  books: BookStore;
  /** Authentication and rate limits, when configured (the gRPC listener uses it too). */
  gate: Gate | undefined;
  /** The KV handle as opened (closed last). */
  kv: Deno.Kv;
  caches: EdgeCaches;
  /** Whether writes work and the KV file is the one opened (readiness). */
  storage: StorageHealth;
}

export { kvLabel } from "../store/kv/label.ts";

/**
 * Opens storage and composes the HTTP edge. `isListening` and `isShuttingDown` feed readiness:
 * the process that owns the listeners knows when they serve.
 */
export async function openEdge(
  config: Config,
  logger: Logger,
  state: { isListening: () => boolean; isShuttingDown: () => boolean },
  options: Pick<ServerOptions, "wrapKv"> = {},
): Promise<Edge> {
  const seedBooks = await readCatalogue(config.booksFile ?? DEFAULT_BOOKS);
  // Before the KV: a JWKS file that cannot be read stops start-up with nothing to close.
  const tokens = createTokenCache<Identity>();
  const gate = await openGate(config, { tokenCache: tokens });
  const path = config.kvPlatform ? undefined : config.kvPath;
  const file = isKvFile(path) ? path : undefined;
  // Opening waits without a word while another process holds a lock: say who holds it.
  const wait = file === undefined ? undefined : await explainKvWait(file, logger);
  let kv: Deno.Kv, store: Store, storage: StorageHealth | undefined;
  try {
    kv = await openKv(path);
  } catch (error) {
    wait?.done();
    throw error;
  }
  try {
    const guarded = await guardStorage(options.wrapKv?.(kv) ?? kv, {
      logger,
      label: kvLabel(config),
      file,
    });
    storage = guarded.health;
    store = await openStore(guarded.kv, {
      seedBooks,
      label: kvLabel(config),
      migrateOnStart: config.migrateOnStart,
      addresses: { maxPerOwner: config.maxAddressesPerOwner },
      onMigration: (e) => {
        if (e.done) logger.info("storage migrated", { from: e.from, to: e.to });
      },
    });
  } catch (error) {
    await storage?.close();
    kv.close();
    throw error;
  } finally {
    wait?.done();
  }
  if (config.auth === undefined) {
    logger.warn("authentication is off: the address book is open to anyone", {
      hint: "set AUTH_JWT_SECRET, AUTH_JWKS_FILE or AUTH_JWKS_URL",
    });
  }
  const graphqlResults = createResultCache();
  const graphqlDocuments = createDocumentCache();
  const app = createApp({
    store,
    logger,
    maxBodyBytes: config.maxBodyBytes,
    isShuttingDown: state.isShuttingDown,
    isListening: state.isListening,
    storage,
    graphql: config.graphql,
    graphqlResults,
    graphqlDocuments,
    corsOrigins: config.corsOrigins,
    publicUrl: config.publicUrl,
  });
  const books = store.books;
  const appFetch: Inner = (request, admission) => app.fetch(request, admission);
  const front = withHotReads(
    { books, logger },
    withCachedGraphql(
      { books, logger, results: graphqlResults, config: config.graphql },
      appFetch,
    ),
  );
  const cors = config.corsOrigins !== undefined;
  const entry = httpEntry({ gate, cors, router: app.router }, front, appFetch);
  // Decided once: only with CORS on does every answer say that it varies by Origin.
  const handler = cors ? withVaryOrigin(entry) : entry;
  const caches = {
    graphqlDocuments: byteStats(graphqlDocuments),
    graphqlResults: graphqlResults.stats,
    tokens: config.auth === undefined ? undefined : tokens,
  };
  return { handler, books, gate, kv, caches, storage };
}

function urlOf(addr: Deno.NetAddr): string {
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  return `http://${host}:${addr.port}`;
}

/** The long-lived process (`deno task start`): opens storage, starts both listeners. */
export async function startServer(
  config: Config,
  options: ServerOptions = {},
): Promise<RunningServer> {
  const logger = options.logger ?? createLogger({ level: config.logLevel });
  let shuttingDown = false;
  // Ready once every listener serves and the `listening` line is out; a supervised gRPC child
  // that is down or restarting makes the process not ready again.
  let listening = false;
  let grpcServing = () => true;
  let httpServing = () => true;
  const { handler, books, gate, kv, storage, caches } = await openEdge(config, logger, {
    isListening: () => listening && httpServing() && grpcServing(),
    isShuttingDown: () => shuttingDown,
  }, options);
  let http: HttpListener;
  try {
    http = listenHttp({ port: config.port, hostname: config.host }, handler, logger);
  } catch (error) {
    await storage.close();
    kv.close();
    throw error;
  }
  const httpUrl = urlOf(http.addr);
  let grpc: Pick<GrpcListener, "url" | "shutdown"> & { serving?: () => boolean } | undefined;
  if (config.grpcPort !== "off") {
    try {
      const listen = {
        port: config.grpcPort,
        host: config.host,
        tls: config.grpcTls,
        ...config.grpcConnections,
      };
      grpc = config.grpcIsolation === "process"
        ? await startSupervisedGrpc({
          ...listen,
          kvPath: config.kvPath,
          booksFile: config.booksFile,
          logLevel: config.logLevel,
          auth: config.auth,
          rateLimit: config.rateLimit,
        }, logger)
        : await startGrpcListener(listen, { books, logger, gate });
    } catch (error) {
      await http.shutdown();
      await storage.close();
      kv.close();
      throw error;
    }
  }
  logger.always("listening", {
    http: httpUrl,
    grpc: grpc?.url,
    kv: kvLabel(config),
    // Each connection holds a descriptor: this bounds the connections the process can hold.
    maxOpenFiles: await openFilesLimit(),
  });
  // Written before readiness turns 200: whoever trusts readiness can trust the log too.
  logger.flush();
  if (grpc?.serving) grpcServing = grpc.serving;
  httpServing = http.serving;
  listening = true;

  let stopping: Promise<void> | undefined;
  let endDrain: (() => void) | undefined;
  function shutdown(options: { drainMs?: number } = {}): Promise<void> {
    if (stopping !== undefined) {
      endDrain?.();
      return stopping;
    }
    // Readiness answers 503 from here on, so balancers stop sending before anything closes.
    shuttingDown = true;
    stopping = (async () => {
      const drainMs = options.drainMs ?? 0;
      if (drainMs > 0) {
        logger.always("draining", { drainMs });
        logger.flush();
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, drainMs);
          endDrain = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      await Promise.all([http.shutdown(), grpc?.shutdown()]);
      await storage.close();
      kv.close();
      logger.always("stopped");
      logger.flush();
    })();
    return stopping;
  }
  return { httpUrl, grpcUrl: grpc?.url, shutdown, caches };
}
