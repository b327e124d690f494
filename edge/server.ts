import type { Config } from "../lib/config.ts";
import { createLogger, type Logger } from "../lib/log.ts";
import { createApp } from "./app.ts";
import type { Handler } from "./front.ts";
import { withHotReads } from "./hot_reads.ts";
import { withCachedGraphql } from "./graphql_cached.ts";
import { withGate } from "./gate.ts";
import { type Gate, openGate } from "../lib/gate.ts";
import { createResultCache } from "../graphql/result_cache.ts";
import { type GrpcListener, startGrpcListener } from "../rpc/grpc_listener.ts";
import { startSupervisedGrpc } from "../rpc/grpc_supervisor.ts";
import { DEFAULT_BOOKS, openKv, readCatalogue } from "../store/open.ts";
import { openStore } from "../store/store.ts";
import type { BookStore } from "../store/books.ts";

/** A started server: its bound URLs and a graceful stop. */
export interface RunningServer {
  /** Base URL of the HTTP listener, e.g. `http://127.0.0.1:8000`. */
  httpUrl: string;
  /** Base URL of the gRPC listener, or undefined when `GRPC_PORT=off`. */
  grpcUrl: string | undefined;
  /** Stops accepting, finishes in-flight requests, closes KV. Safe to call twice. */
  shutdown(): Promise<void>;
}

/** The HTTP edge over an open store: the handler and what it holds. */
export interface Edge {
  /** The whole HTTP side: answers in front of the router, then the app. */
  handler: Handler;
  books: BookStore;
  /** Authentication and rate limits, when configured (the gRPC listener uses it too). */
  gate: Gate | undefined;
  kv: Deno.Kv;
}

/** How the listening line names the KV in use (never a URL: it may carry a token). */
export function kvLabel(config: Config): string {
  if (config.kvPlatform) return "platform";
  return /^https?:\/\//.test(config.kvPath) ? "remote" : config.kvPath;
}

/**
 * Opens storage and composes the HTTP edge. `isListening` and `isShuttingDown` feed readiness:
 * the process that owns the listeners knows when they serve.
 */
export async function openEdge(
  config: Config,
  logger: Logger,
  state: { isListening: () => boolean; isShuttingDown: () => boolean },
): Promise<Edge> {
  const seedBooks = await readCatalogue(config.booksFile ?? DEFAULT_BOOKS);
  // Before the KV: a JWKS file that cannot be read stops start-up with nothing to close.
  const gate = await openGate(config);
  const kv = await openKv(config.kvPlatform ? undefined : config.kvPath);
  let store;
  try {
    store = await openStore(kv, { seedBooks });
  } catch (error) {
    kv.close();
    throw error;
  }
  if (config.auth === undefined) {
    logger.warn("authentication is off: the address book is open to anyone", {
      hint: "set AUTH_JWT_SECRET, AUTH_JWKS_FILE or AUTH_JWKS_URL",
    });
  }
  const graphqlResults = createResultCache();
  const app = createApp({
    store,
    logger,
    maxBodyBytes: config.maxBodyBytes,
    isShuttingDown: state.isShuttingDown,
    isListening: state.isListening,
    graphql: config.graphql,
    graphqlResults,
    corsOrigins: config.corsOrigins,
  });
  const books = store.books;
  const front = withHotReads(
    { books, logger },
    withCachedGraphql(
      { books, logger, results: graphqlResults, config: config.graphql },
      app.fetch,
    ),
  );
  // Decided once: with neither a gate nor CORS, requests go straight to the front answers.
  const handler = gate === undefined && config.corsOrigins === undefined
    ? front
    : withGate({ gate, cors: config.corsOrigins !== undefined }, front, app.fetch);
  return { handler, books, gate, kv };
}

function urlOf(addr: Deno.NetAddr): string {
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  return `http://${host}:${addr.port}`;
}

/** The long-lived process (`deno task start`): opens storage, starts both listeners. */
export async function startServer(
  config: Config,
  options: { logger?: Logger } = {},
): Promise<RunningServer> {
  const logger = options.logger ?? createLogger({ level: config.logLevel });
  let shuttingDown = false;
  // Ready once every listener serves and the `listening` line is out; a supervised gRPC child
  // that is down or restarting makes the process not ready again.
  let listening = false;
  let grpcServing = () => true;
  const { handler, books, gate, kv } = await openEdge(config, logger, {
    isListening: () => listening && grpcServing(),
    isShuttingDown: () => shuttingDown,
  });
  const http = Deno.serve({
    port: config.port,
    hostname: config.host,
    onListen: () => {},
  }, handler);
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
      kv.close();
      throw error;
    }
  }
  logger.always("listening", { http: httpUrl, grpc: grpc?.url, kv: kvLabel(config) });
  // Written before readiness turns 200: whoever trusts readiness can trust the log too.
  logger.flush();
  if (grpc?.serving) grpcServing = grpc.serving;
  listening = true;

  let stopping: Promise<void> | undefined;
  function shutdown(): Promise<void> {
    stopping ??= (async () => {
      shuttingDown = true;
      await Promise.all([http.shutdown(), grpc?.shutdown()]);
      kv.close();
      logger.always("stopped");
      logger.flush();
    })();
    return stopping;
  }
  return { httpUrl, grpcUrl: grpc?.url, shutdown };
}
