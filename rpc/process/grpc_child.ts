/**
 * Entry point of the gRPC listener's own process (see grpc_supervisor.ts). It opens the KV the
 * HTTP process runs on (a file or a KV Connect URL: processes share one safely) with the same
 * storage guard and layout check, never migrating, and serves the catalogue and the address book
 * from it over HTTP/2; it reports its bound URL as a `grpc listening` log line on stdout. It
 * stops gracefully on SIGTERM, or when its stdin closes (the HTTP process is gone), so it never
 * outlives its supervisor.
 */
import type {
  AuthConfig,
  EventsConfig,
  GrpcConnectionConfig,
  RateLimitConfig,
} from "../../lib/config.ts";
import { ConfigError } from "../../lib/config_error.ts";
import type { Book } from "../../lib/schemas.ts";
import { openGate } from "../../security/gate.ts";
import { createLogger, type LogFormat, type LogLevel } from "../../lib/log.ts";
import { writeLinesToStdout } from "../../lib/stdout_lines.ts";
import { DEFAULT_BOOKS, readCatalogue } from "../../store/kv/open.ts";
import { kvLabel } from "../../store/kv/label.ts";
import { openStorage } from "../../store/storage.ts";
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
  /**
   * Its supervisor's logger's (JSON when absent): the lines of both processes look alike, on a
   * shared stdout or relayed.
   */
  logFormat?: LogFormat;
  /** The gate's settings: this process runs its own gate (its own rate-limit buckets). */
  auth: AuthConfig | undefined;
  rateLimit: RateLimitConfig | undefined;
  /**
   * `MAX_ADDRESSES_PER_OWNER` as the HTTP process resolved it; absent: no quota (JSON has no
   * Infinity, which would arrive as null).
   */
  maxAddressesPerOwner?: number;
  /** The change feed's settings, as the HTTP process read them. */
  events?: EventsConfig;
  /**
   * The supervisor writes the catalogue it serves to stdin, as one line of JSON, which seeds KV
   * should it not be seeded yet; else the child reads and checks `booksFile` itself.
   */
  catalogueOnStdin?: boolean;
}

/** Exit code of a child that stopped itself because too many errors escaped (EX_SOFTWARE). */
const EXIT_UNTRUSTED = 70;

/** Environment variable carrying the child's configuration. */
export const CHILD_CONFIG_ENV = "GRPC_CHILD_CONFIG";

/**
 * Starts the line on stderr that tells the supervisor the child listens (JSON with `grpc`, the
 * bound URL, follows). Its stdout may be the server's own, which the supervisor does not read.
 */
export const READY_MARKER = "grpc child ready ";

async function runChild(config: GrpcChildConfig): Promise<void> {
  // stdout may be shared with the supervisor's process: lines are written whole.
  const logger = createLogger({
    level: config.logLevel,
    format: config.logFormat,
    write: writeLinesToStdout,
  });
  const pipe = readSupervisorPipe();
  const gate = await openGate(config);
  const seedBooks = config.catalogueOnStdin
    ? await pipe.catalogue
    : await readCatalogue(config.booksFile ?? DEFAULT_BOOKS);
  // The HTTP process opened (and, if asked to, migrated) this KV before it started this one.
  const { kv, store, storage } = await openStorage({
    path: config.kvPath,
    label: kvLabel({ kvPlatform: false, kvPath: config.kvPath }),
    seedBooks,
    migrateOnStart: false,
    maxAddressesPerOwner: config.maxAddressesPerOwner ?? Infinity,
    events: config.events,
    logger,
  });
  const closeStorage = async () => {
    await storage.close();
    kv.close();
  };
  const listener = await startGrpcListener(
    {
      port: config.port,
      host: config.host,
      tls: config.tls,
      maxConnectionsPerClient: config.maxConnectionsPerClient,
      handshakeTimeoutMs: config.handshakeTimeoutMs,
      idleTimeoutMs: config.idleTimeoutMs,
    },
    { books: store.books, addresses: store.addresses, feed: store.feed, logger, gate },
  ).catch(async (error) => {
    await closeStorage();
    throw error;
  });
  logger.always("grpc listening", { grpc: listener.url, pid: Deno.pid });
  logger.flush();
  // After the line above is written: no reader of the log sees the server ready before it.
  const ready = `${READY_MARKER}${JSON.stringify({ grpc: listener.url })}\n`;
  Deno.stderr.writeSync(new TextEncoder().encode(ready));

  let stopping = false;
  const stop = async (code = 0) => {
    if (stopping) return;
    stopping = true;
    // Open streams end first, each after the change it is sending, or the drain would wait.
    store.feed.closeAll();
    await listener.shutdown();
    await closeStorage();
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
  void pipe.closed.then(() => stop());
}

/**
 * The supervisor's pipe on stdin: the catalogue's JSON on its first line, when the supervisor
 * hands it over, then nothing until the supervisor goes.
 *
 * Why handed over: the HTTP process has read and validated the seed file already, and seeded KV
 * with it; the catalogue is what this process would seed with too, so it needs no seed file.
 */
function readSupervisorPipe(): { catalogue: Promise<Book[]>; closed: Promise<void> } {
  let resolveCatalogue!: (books: Book[]) => void;
  let rejectCatalogue!: (error: Error) => void;
  const catalogue = new Promise<Book[]>((resolve, reject) => {
    resolveCatalogue = resolve;
    rejectCatalogue = reject;
  });
  catalogue.catch(() => {}); // awaited only when handed over
  const closed = (async () => {
    let line = "";
    let lineDone = false;
    for await (const text of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
      if (lineDone) continue;
      line += text;
      const end = line.indexOf("\n");
      if (end === -1) continue;
      lineDone = true;
      try {
        resolveCatalogue(JSON.parse(line.slice(0, end)) as Book[]);
      } catch (error) {
        rejectCatalogue(error as Error);
      }
      line = "";
    }
    if (!lineDone) rejectCatalogue(new Error("the supervisor closed stdin before the catalogue"));
  })();
  return { catalogue, closed };
}

if (import.meta.main) {
  try {
    await runChild(JSON.parse(Deno.env.get(CHILD_CONFIG_ENV) ?? "null") as GrpcChildConfig);
  } catch (error) {
    console.error(error instanceof ConfigError ? error.message : `grpc start-up failed: ${error}`);
    Deno.exit(error instanceof ConfigError ? 2 : 1);
  }
}
