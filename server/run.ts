import type { Config } from "../lib/config.ts";
import { createLogger, type Logger, stdoutLogFormat } from "../lib/log.ts";
import { openFilesLimit } from "../lib/proc.ts";
import { type GrpcListener, startGrpcListener } from "../rpc/listener/grpc_listener.ts";
import { startSupervisedGrpc } from "../rpc/process/grpc_supervisor.ts";
import { kvLabel } from "../store/kv/label.ts";
import { type EdgeCaches, openEdge } from "./compose.ts";
import { type HttpListener, listenHttp } from "./listener.ts";

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

/** What the process passes in besides the configuration. */
export interface ServerOptions {
  logger?: Logger;
  /**
   * The logger writes to this process's stdout (without a logger: true). The supervised gRPC
   * child then writes its log lines to the same stdout itself instead of through this process.
   */
  logToStdout?: boolean;
  /**
   * Wraps the KV handle under everything else (the storage guard included), the way a failing
   * disk would sit under it: tests inject storage faults with it.
   */
  wrapKv?: (kv: Deno.Kv) => Deno.Kv;
}

function urlOf(addr: Deno.NetAddr): string {
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  return `http://${host}:${addr.port}`;
}

/**
 * Whether the gRPC listener runs in its own process (`GRPC_ISOLATION=process`). The child opens
 * the same KV for the address book, which `:memory:` (or the platform's KV) cannot be: then the
 * listener runs in this process, and the log says so once.
 */
function isolateGrpc(config: Config, logger: Logger): boolean {
  if (config.grpcIsolation === "inline") return false;
  if (!config.kvPlatform && config.kvPath !== ":memory:") return true;
  logger.warn("grpc listener runs in this process", {
    reason: "a KV in memory cannot be shared with a child process",
    hint: "set KV_PATH to a file for GRPC_ISOLATION=process",
  });
  return false;
}

/** The long-lived process (`deno task start`): opens storage, starts both listeners. */
export async function startServer(
  config: Config,
  options: ServerOptions = {},
): Promise<RunningServer> {
  const logger = options.logger ??
    createLogger({ level: config.logLevel, format: stdoutLogFormat(config.logFormat) });
  const logToStdout = options.logToStdout ?? options.logger === undefined;
  let shuttingDown = false;
  // Ready once every listener serves and the `listening` line is out; a supervised gRPC child
  // that is down or restarting makes the process not ready again.
  let listening = false;
  let grpcServing = () => true;
  let httpServing = () => true;
  const { handler, books, addresses, feed, gate, kv, storage, caches } = await openEdge(
    config,
    logger,
    {
      isListening: () => listening && httpServing() && grpcServing(),
      isShuttingDown: () => shuttingDown,
    },
    options,
  );
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
      grpc = isolateGrpc(config, logger)
        ? await startSupervisedGrpc(
          {
            ...listen,
            kvPath: config.kvPath,
            booksFile: config.booksFile,
            logLevel: config.logLevel,
            logFormat: logger.format,
            auth: config.auth,
            rateLimit: config.rateLimit,
            maxAddressesPerOwner: Number.isFinite(config.maxAddressesPerOwner)
              ? config.maxAddressesPerOwner
              : undefined,
            events: config.events,
          },
          logger,
          { logToStdout, denoFlags: config.grpcChildFlags, books: books.list() },
        )
        : await startGrpcListener(listen, { books, addresses, feed, logger, gate });
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
      // Open streams end now, each after the change it is sending (its client resumes from
      // there elsewhere), or the listeners would wait for them.
      feed.closeAll();
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
