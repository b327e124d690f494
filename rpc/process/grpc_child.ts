/**
 * Entry point of the gRPC listener's own process (see grpc_supervisor.ts). It serves the
 * catalogue the HTTP process hands it on stdin (or, started without one, loads it from the same
 * KV itself) over HTTP/2, and reports its bound URL as a `grpc listening` log line on stdout. It
 * stops gracefully on SIGTERM, or when its stdin closes (the HTTP process is gone), so it never
 * outlives its supervisor.
 */
import type { AuthConfig, GrpcConnectionConfig, RateLimitConfig } from "../../lib/config.ts";
import { ConfigError } from "../../lib/config_error.ts";
import type { Book } from "../../lib/schemas.ts";
import { openGate } from "../../security/gate.ts";
import { createLogger, type LogFormat, type LogLevel } from "../../lib/log.ts";
import { writeLinesToStdout } from "../../lib/stdout_lines.ts";
import { type BookStore, createBookStore, openBookStore } from "../../store/books.ts";
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
   * The supervisor writes the catalogue it serves to stdin, as one line of JSON; else the child
   * reads `booksFile` and `kvPath` itself.
   */
  catalogueOnStdin?: boolean;
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
  const logger = createLogger({
    level: config.logLevel,
    format: config.logFormat,
    write: writeLinesToStdout,
  });
  const pipe = readSupervisorPipe();
  const gate = await openGate(config);
  const books = config.catalogueOnStdin
    ? createBookStore(await pipe.catalogue)
    : await loadCatalogue(config);
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
  void pipe.closed.then(() => stop());
}

/**
 * The supervisor's pipe on stdin: the catalogue's JSON on its first line, when the supervisor
 * hands it over, then nothing until the supervisor goes.
 *
 * Why handed over: the HTTP process has loaded and validated the catalogue already; reading it
 * again here took this process's own copy of KV and of the validation library (about 10 MiB of
 * memory, docs/bench.md), and with an in-memory KV the two processes would not share a store.
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

/** The catalogue read from BOOKS_FILE and KV, as the HTTP process does (a child on its own). */
async function loadCatalogue(config: GrpcChildConfig): Promise<BookStore> {
  // Loaded only here: validating the seed file takes the configuration schema's library.
  const { DEFAULT_BOOKS, openKv, readCatalogue } = await import("../../store/kv/open.ts");
  const seed = await readCatalogue(config.booksFile ?? DEFAULT_BOOKS);
  const kv = await openKv(config.kvPath);
  // The catalogue is read-only and kept in memory, so KV is closed once it is loaded.
  return await openBookStore(kv, seed).finally(() => kv.close());
}

if (import.meta.main) {
  try {
    await runChild(JSON.parse(Deno.env.get(CHILD_CONFIG_ENV) ?? "null") as GrpcChildConfig);
  } catch (error) {
    console.error(error instanceof ConfigError ? error.message : `grpc start-up failed: ${error}`);
    Deno.exit(error instanceof ConfigError ? 2 : 1);
  }
}
