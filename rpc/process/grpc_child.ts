/**
 * Entry point of the gRPC listener's own process (see grpc_supervisor.ts). It loads the
 * catalogue from the same KV as the HTTP process, serves it over HTTP/2, and reports its bound
 * URL as a `grpc listening` log line on stdout. It stops gracefully on SIGTERM, or when its
 * stdin closes (the HTTP process is gone), so it never outlives its supervisor.
 */
import {
  type AuthConfig,
  ConfigError,
  type GrpcConnectionConfig,
  type RateLimitConfig,
} from "../../lib/config.ts";
import { openGate } from "../../security/gate.ts";
import { createLogger, type LogLevel } from "../../lib/log.ts";
import { writeLinesToStdout } from "../../lib/stdout_lines.ts";
import { openBookStore } from "../../store/books.ts";
import { DEFAULT_BOOKS, openKv, readCatalogue } from "../../store/kv/open.ts";
import { startGrpcListener } from "../listener/grpc_listener.ts";
import { installLastResort } from "./last_resort.ts";

/** What the supervisor passes to the child (as JSON in `GRPC_CHILD_CONFIG`). */
export interface GrpcChildConfig extends Partial<GrpcConnectionConfig> {
  port: number;
  host: string;
  kvPath: string;
  booksFile: string | undefined;
  tls: { certFile: string; keyFile: string } | undefined;
  logLevel: LogLevel;
  /** The gate's settings: this process runs its own gate (its own rate-limit buckets). */
  auth: AuthConfig | undefined;
  rateLimit: RateLimitConfig | undefined;
}

/** Exit code of a child that stopped itself because too many errors escaped (EX_SOFTWARE). */
export const EXIT_UNTRUSTED = 70;

/** Environment variable carrying the child's configuration. */
export const CHILD_CONFIG_ENV = "GRPC_CHILD_CONFIG";

/**
 * Starts the line on stderr that tells the supervisor the child listens (JSON with `grpc`, the
 * bound URL, follows). Its stdout may be the server's own, which the supervisor does not read.
 */
export const READY_MARKER = "grpc child ready ";

async function runChild(config: GrpcChildConfig): Promise<void> {
  // stdout may be shared with the supervisor's process: lines are written whole.
  const logger = createLogger({ level: config.logLevel, write: writeLinesToStdout });
  const gate = await openGate(config);
  const seed = await readCatalogue(config.booksFile ?? DEFAULT_BOOKS);
  const kv = await openKv(config.kvPath);
  // The catalogue is read-only and kept in memory, so KV is closed once it is loaded.
  const books = await openBookStore(kv, seed).finally(() => kv.close());
  const listener = await startGrpcListener(
    {
      port: config.port,
      host: config.host,
      tls: config.tls,
      maxConnectionsPerClient: config.maxConnectionsPerClient,
      handshakeTimeoutMs: config.handshakeTimeoutMs,
      idleTimeoutMs: config.idleTimeoutMs,
    },
    { books, logger, gate },
  );
  logger.always("grpc listening", { grpc: listener.url, pid: Deno.pid });
  logger.flush();
  // After the line above is written: no reader of the log sees the server ready before it.
  const ready = `${READY_MARKER}${JSON.stringify({ grpc: listener.url })}\n`;
  Deno.stderr.writeSync(new TextEncoder().encode(ready));

  let stopping = false;
  const stop = async (code = 0) => {
    if (stopping) return;
    stopping = true;
    await listener.shutdown();
    logger.flush();
    Deno.exit(code);
  };
  // What escapes every handler is logged and counted, not fatal (see last_resort.ts); a fault
  // that keeps repeating ends this process gracefully and the supervisor starts a fresh one.
  installLastResort({ logger, onUnsafe: () => void stop(EXIT_UNTRUSTED) });
  // Ctrl-C reaches the whole process group; the supervisor decides when this process stops.
  Deno.addSignalListener("SIGINT", () => {});
  Deno.addSignalListener("SIGTERM", () => void stop());
  // stdin is a pipe from the supervisor: EOF means it is gone.
  (async () => {
    for await (const _ of Deno.stdin.readable) { /* nothing is sent */ }
    await stop();
  })();
}

if (import.meta.main) {
  try {
    await runChild(JSON.parse(Deno.env.get(CHILD_CONFIG_ENV) ?? "null") as GrpcChildConfig);
  } catch (error) {
    console.error(error instanceof ConfigError ? error.message : `grpc start-up failed: ${error}`);
    Deno.exit(error instanceof ConfigError ? 2 : 1);
  }
}
