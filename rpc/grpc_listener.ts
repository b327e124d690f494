import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { ConfigError } from "../lib/config.ts";
import type { Logger } from "../lib/log.ts";
import type { BookStore } from "../store/books.ts";
import { createHealthState, ServingStatus } from "./health_service.ts";
import { requestIdFrom, requestIdKey } from "./interceptor.ts";
import { APP_SERVICES, grpcListenerRoutes, handlerOptions } from "./router.ts";
import { unknownMethod } from "./unknown_method.ts";

/** Where and how the gRPC listener binds. */
export interface GrpcListenerConfig {
  port: number;
  host: string;
  /** PEM certificate chain and key files: serve TLS (ALPN `h2`) instead of cleartext HTTP/2. */
  tls?: { certFile: string; keyFile: string } | undefined;
}

/** A started gRPC listener. */
export interface GrpcListener {
  /** Base URL, e.g. `http://127.0.0.1:50051`. */
  url: string;
  /**
   * Graceful stop: health turns NOT_SERVING, no new connections, health watches end with
   * UNAVAILABLE, every connection gets GOAWAY and its in-flight calls finish; connections still
   * open after `graceMs` are closed hard.
   */
  shutdown(graceMs?: number): Promise<void>;
}

// HTTP/2 limits. Streams per connection as most gRPC servers advertise; a connection that is
// idle this long is sent GOAWAY (clients reconnect transparently); more connections than this
// are refused, so a connection flood cannot exhaust memory.
const MAX_CONCURRENT_STREAMS = 100;
const MAX_HEADER_LIST_BYTES = 16 * 1024;
const MAX_SESSIONS = 1000;
const IDLE_SESSION_MS = 5 * 60 * 1000;
const DEFAULT_GRACE_MS = 10_000;

/** Starts the HTTP/2 listener serving gRPC, gRPC-Web and Connect, health and reflection. */
export async function startGrpcListener(
  config: GrpcListenerConfig,
  deps: { books: BookStore; logger: Logger },
): Promise<GrpcListener> {
  const { logger } = deps;
  const health = createHealthState(APP_SERVICES.map((s) => s.typeName));
  const stopStreams = new AbortController();
  const handler = connectNodeAdapter({
    routes: grpcListenerRoutes({ books: deps.books, health }),
    ...handlerOptions({ logger, accessLog: true, shutdownSignal: stopStreams.signal }),
    contextValues: (req) =>
      createContextValues().set(
        requestIdKey,
        requestIdFrom(String(req.headers["x-request-id"] ?? "")),
      ),
    fallback: unknownMethod,
  });
  const options: http2.ServerOptions = {
    settings: {
      maxConcurrentStreams: MAX_CONCURRENT_STREAMS,
      maxHeaderListSize: MAX_HEADER_LIST_BYTES,
    },
  };
  const server = config.tls
    ? http2.createSecureServer(
      { ...options, ...await readTls(config.tls), allowHTTP1: true },
      handler,
    )
    : http2.createServer(options, handler);

  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session: http2.ServerHttp2Session) => {
    if (sessions.size >= MAX_SESSIONS) {
      logger.warn("grpc connection refused", { reason: "too many connections" });
      session.destroy();
      return;
    }
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
    // A broken peer (bad frames, protocol errors) ends its own connection, never the server.
    session.on("error", (error: Error) => {
      logger.debug("grpc connection error", { error: error.message });
    });
    session.setTimeout(IDLE_SESSION_MS, () => session.close());
  });
  server.on("sessionError", (error: Error) => {
    logger.debug("grpc connection error", { error: error.message });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.address.includes(":") ? `[${address.address}]` : address.address;
  const url = `${config.tls ? "https" : "http"}://${host}:${address.port}`;

  let stopping: Promise<void> | undefined;
  function shutdown(graceMs = DEFAULT_GRACE_MS): Promise<void> {
    stopping ??= (async () => {
      health.setAll(ServingStatus.NOT_SERVING);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      stopStreams.abort(new ConnectError("The server is shutting down.", Code.Unavailable));
      for (const session of sessions) session.close();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const graceOver = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
      await Promise.race([closed, graceOver]);
      clearTimeout(timer);
      for (const session of sessions) session.destroy();
      await closed;
    })();
    return stopping;
  }
  return { url, shutdown };
}

async function readTls(files: { certFile: string; keyFile: string }) {
  const read = async (name: string, path: string) => {
    try {
      return await Deno.readTextFile(path);
    } catch (error) {
      throw new ConfigError(`invalid ${name}=${path}: ${(error as Error).message}`);
    }
  };
  return {
    cert: await read("GRPC_TLS_CERT", files.certFile),
    key: await read("GRPC_TLS_KEY", files.keyFile),
  };
}
