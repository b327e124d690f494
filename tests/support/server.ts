import { loadConfig } from "../../lib/config.ts";
import type { LogLevel } from "../../lib/log.ts";
import { type RunningServer, startServer } from "../../main.ts";
import { type GrpcListenerConfig, startGrpcListener } from "../../rpc/listener/grpc_listener.ts";
import { type BookStore, createBookStore } from "../../store/books.ts";
import { openAddressStore } from "../../store/addresses/repository.ts";
import type { ServerOptions } from "../../server/run.ts";
import type { Handler } from "../../server/handler.ts";
import { checkContract } from "./contract.ts";
import { captureLogs, type LogLine, waitForLine } from "./logs.ts";
import { type Spawned, spawnMain, withChildFlags } from "./process.ts";
import { closeClientsOf } from "./rpc_clients.ts";

/** An in-process server on port 0 with a temporary KV file, and the log lines it wrote. */
export interface TestServer extends RunningServer {
  kvPath: string;
  logs: LogLine[];
  /** Shuts down and removes the temporary KV directory. */
  close(): Promise<void>;
}

/**
 * Starts the real server (both listeners on port 0 unless overridden) on a fresh KV file. Its
 * `shutdown` and `close` close the test's RPC clients of it first (tests/support/rpc_clients.ts).
 */
export async function startTestServer(
  env: Record<string, string> = {},
  options: Pick<ServerOptions, "wrapKv"> = {},
): Promise<TestServer> {
  const dir = await Deno.makeTempDir({ prefix: "books-test-" });
  const kvPath = env.KV_PATH ?? `${dir}/kv.sqlite3`;
  const config = loadConfig(withChildFlags({
    PORT: "0",
    GRPC_PORT: "0",
    HOST: "127.0.0.1",
    KV_PATH: kvPath,
    ...env,
  }));
  const { logger, lines: logs } = captureLogs("debug");
  const server = await startServer(config, { logger, ...options });
  checkContract(server.httpUrl);
  const shutdown: RunningServer["shutdown"] = async (options) => {
    await closeClientsOf(server.httpUrl, server.grpcUrl);
    await server.shutdown(options);
  };
  return {
    ...server,
    kvPath,
    logs,
    shutdown,
    close: async () => {
      await shutdown();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** A server running as its own `deno run main.ts` process. */
interface ServerProcess extends Spawned {
  httpUrl: string;
  grpcUrl: string | undefined;
  /** Sends SIGKILL (no graceful anything) and waits for the process to be gone. */
  kill(): Promise<void>;
}

/**
 * Spawns the server as a separate process on port 0 and waits for its `listening` log line. Its
 * `stop` and `kill` close the test's RPC clients of it first.
 */
export async function spawnServer(env: Record<string, string>): Promise<ServerProcess> {
  const process = spawnMain({ PORT: "0", GRPC_PORT: "0", HOST: "127.0.0.1", ...env });
  let listening: LogLine;
  try {
    // A process that stops at start-up says why at once, not after the wait's deadline.
    listening = await Promise.race([
      waitForLine(process.lines, "listening"),
      process.exited.then((code): never => {
        throw new Error(`exited with code ${code}`);
      }),
    ]);
  } catch (error) {
    await process.stop("SIGKILL");
    throw new Error(`server did not start: ${(error as Error).message}\n${process.output()}`);
  }
  const httpUrl = String(listening.http);
  const grpcUrl = listening.grpc === undefined ? undefined : String(listening.grpc);
  checkContract(httpUrl);
  const stop = async (signal?: Deno.Signal) => {
    await closeClientsOf(httpUrl, grpcUrl);
    return await process.stop(signal);
  };
  return {
    ...process,
    httpUrl,
    grpcUrl,
    stop,
    kill: async () => void await stop("SIGKILL"),
  };
}

/**
 * A gRPC listener alone (no HTTP side, no child process), with the lines it logged; its address
 * book is an empty one in a KV in memory.
 */
interface TestListener {
  url: string;
  logs: LogLine[];
  /** Writes the lines still buffered. */
  flush(): void;
  /** Closes the test's RPC clients of it, then stops it gracefully. */
  shutdown(graceMs?: number): Promise<void>;
}

/** A catalogue of one book, for tests of the listener rather than of the catalogue. */
function oneBook(): BookStore {
  return createBookStore([
    { id: 1, title: "Kindred", year: 1979, author: { firstName: "Octavia", lastName: "Butler" } },
  ]);
}

/** Starts the gRPC listener on port 0 of 127.0.0.1 (unless `config` says otherwise). */
export async function startTestListener(
  config: Partial<GrpcListenerConfig> = {},
  options: { books?: BookStore; level?: LogLevel } = {},
): Promise<TestListener> {
  const { logger, lines } = captureLogs(options.level ?? "debug");
  const kv = await Deno.openKv(":memory:");
  const listener = await startGrpcListener(
    { port: 0, host: "127.0.0.1", ...config },
    { books: options.books ?? oneBook(), addresses: openAddressStore(kv), logger },
  );
  // A listener on every interface is reached on the loopback address.
  const url = listener.url.replace("0.0.0.0", "127.0.0.1");
  return {
    url,
    logs: lines,
    flush: () => logger.flush(),
    shutdown: async (graceMs) => {
      await closeClientsOf(url);
      await listener.shutdown(graceMs);
      kv.close();
    },
  };
}

/** An HTTP entry (tests/support/answers.ts `entryOf`) served in process on port 0. */
export function serveEntry(handler: Handler): { url: string; close(): Promise<void> } {
  const http = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, handler);
  return { url: `http://127.0.0.1:${http.addr.port}`, close: () => http.shutdown() };
}
