import { type Config, ConfigError, loadConfig } from "./lib/config.ts";
import { createLogger, type Logger } from "./lib/log.ts";
import { createApp } from "./edge/app.ts";
import { withHotReads } from "./edge/hot_reads.ts";
import { withCachedGraphql } from "./edge/graphql_cached.ts";
import { withGate } from "./edge/gate.ts";
import { openGate } from "./lib/gate.ts";
import { createResultCache } from "./graphql/result_cache.ts";
import { type GrpcListener, startGrpcListener } from "./rpc/grpc_listener.ts";
import { startSupervisedGrpc } from "./rpc/grpc_supervisor.ts";
import { DEFAULT_BOOKS, openKv, readCatalogue } from "./store/open.ts";
import { openStore } from "./store/store.ts";

/** A started server: its bound URLs and a graceful stop. */
export interface RunningServer {
  /** Base URL of the HTTP listener, e.g. `http://127.0.0.1:8000`. */
  httpUrl: string;
  /** Base URL of the gRPC listener, or undefined when `GRPC_PORT=off`. */
  grpcUrl: string | undefined;
  /** Stops accepting, finishes in-flight requests, closes KV. Safe to call twice. */
  shutdown(): Promise<void>;
}

function urlOf(addr: Deno.NetAddr): string {
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  return `http://${host}:${addr.port}`;
}

/** Opens storage, wires the protocols and starts the listeners. */
export async function startServer(
  config: Config,
  options: { logger?: Logger } = {},
): Promise<RunningServer> {
  const logger = options.logger ?? createLogger({ level: config.logLevel });
  const seedBooks = await readCatalogue(config.booksFile ?? DEFAULT_BOOKS);
  const kv = await openKv(config.kvPath);
  let shuttingDown = false;
  // Ready once every listener serves and the `listening` line is out; a supervised gRPC child
  // that is down or restarting makes the process not ready again.
  let listening = false;
  let grpcServing = () => true;
  let store;
  try {
    store = await openStore(kv, { seedBooks });
  } catch (error) {
    kv.close();
    throw error;
  }
  let gate;
  try {
    gate = await openGate(config);
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
    isShuttingDown: () => shuttingDown,
    isListening: () => listening && grpcServing(),
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
  const http = Deno.serve({
    port: config.port,
    hostname: config.host,
    onListen: () => {},
  }, handler);
  const httpUrl = urlOf(http.addr);
  let grpc: Pick<GrpcListener, "url" | "shutdown"> & { serving?: () => boolean } | undefined;
  if (config.grpcPort !== "off") {
    try {
      const listen = { port: config.grpcPort, host: config.host, tls: config.grpcTls };
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
  logger.always("listening", {
    http: httpUrl,
    grpc: grpc?.url,
    kv: config.kvPath.startsWith("http") ? "remote" : config.kvPath,
  });
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

if (import.meta.main) {
  let config: Config;
  try {
    config = loadConfig(Deno.env.toObject());
  } catch (error) {
    console.error(error instanceof ConfigError ? error.message : error);
    Deno.exit(2);
  }
  const logger = createLogger({ level: config.logLevel });
  let server: RunningServer;
  try {
    server = await startServer(config, { logger });
  } catch (error) {
    logger.flush();
    console.error(error instanceof ConfigError ? error.message : `start-up failed: ${error}`);
    Deno.exit(1);
  }
  const stop = async (signal: string) => {
    logger.info("shutting down", { signal });
    await server.shutdown();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", () => void stop("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => void stop("SIGTERM"));
}
