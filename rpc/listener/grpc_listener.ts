import { createPrivateKey, X509Certificate } from "node:crypto";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { ConfigError } from "../../lib/config_error.ts";
import type { Logger } from "../../lib/log.ts";
import { createHealthState, ServingStatus } from "../connect/health_service.ts";
import { requestIdFrom } from "../../lib/http/request_id.ts";
import { gateKey, requestIdKey } from "../connect/interceptor.ts";
import { unaryStreams } from "../unary/stream_unary.ts";
import { recordUnaryMethods } from "../unary/unary_methods.ts";
import { createGoawayFilter } from "../http2/goaway_filter.ts";
import { createFieldLineCounter, type FieldLineCounter } from "../http2/field_lines.ts";
import { DEFAULT_CONNECTION_LIMITS, guardConnections } from "./connection_guard.ts";
import { createRefusalLog } from "./refusal_log.ts";
import { coalesceWrites, type NativeSession, nativeSession } from "../http2/native_session.ts";
import {
  APP_SERVICES,
  type AppStores,
  grpcListenerRoutes,
  handlerOptions,
  MAX_MESSAGE_BYTES,
  procedureOf,
  rpcAccess,
} from "../connect/router.ts";
import type { Access } from "../../security/access.ts";
import { answerUnrouted } from "../connect/unknown_method.ts";
import type { Gate } from "../../security/gate.ts";
import { gatedRequests, gatedStreams, type PendingDecision, type TakeStream } from "./gated.ts";
import { refusedCalls } from "./refused_call.ts";

/** Where and how the gRPC listener binds. */
export interface GrpcListenerConfig {
  port: number;
  host: string;
  /** PEM certificate chain and key files: serve TLS (ALPN `h2`) instead of cleartext HTTP/2. */
  tls?: { certFile: string; keyFile: string } | undefined;
  /** Most connections open at once; more are closed at once (default 1000). */
  maxConnections?: number;
  /** Most connections open at once from one client address (default 100). */
  maxConnectionsPerClient?: number;
  /** Time to complete the HTTP/2 handshake (default 5 s). */
  handshakeTimeoutMs?: number;
  /** A connection with no call in flight for this long is closed (default 5 minutes). */
  idleTimeoutMs?: number;
  /** Refused connections are logged as one summary line per interval (default 10 s). */
  refusalLogIntervalMs?: number;
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

// HTTP/2 limits: streams per connection as most gRPC servers advertise. Connection limits are
// in connection_guard.ts.
const MAX_CONCURRENT_STREAMS = 100;
const MAX_HEADER_LIST_BYTES = 16 * 1024;
const DEFAULT_GRACE_MS = 10_000;
const DRAIN_MAX_BYTES = 2 * MAX_MESSAGE_BYTES;
const DRAIN_MAX_MS = 10_000;

/**
 * Starts the HTTP/2 listener serving the application services over gRPC, gRPC-Web and Connect,
 * with health and reflection.
 */
export async function startGrpcListener(
  config: GrpcListenerConfig,
  deps: AppStores & {
    logger: Logger;
    gate?: Gate | undefined;
    /** false: every call through Connect's node adapter (the side-by-side tests' reference). */
    leanUnary?: boolean;
  },
): Promise<GrpcListener> {
  const { logger, gate } = deps;
  // The gate's decision per HTTP/2 stream (or HTTP/1.1 request), taken before anything answers.
  const decisions = new WeakMap<object, PendingDecision>();
  const health = createHealthState(APP_SERVICES.map((s) => s.typeName));
  const stopStreams = new AbortController();
  const options = handlerOptions({ logger, accessLog: true, shutdownSignal: stopStreams.signal });
  // Every unary method is answered on its stream by the lean path with the service Connect's
  // router registers (one registration), and whatever it does not take by Connect.
  const unary = recordUnaryMethods(
    grpcListenerRoutes({
      books: deps.books,
      addresses: deps.addresses,
      feed: deps.feed,
      health,
    }),
    options,
  );
  // What each path's service declares, for the gate: taken from the same router that dispatches.
  const access = new Map<string, { access: Access; methods: readonly string[] }>();
  const accessOf = (method: string, path: string): Access => {
    const route = access.get(path);
    if (route === undefined) return "authenticated";
    // Only the call a probe declares is exempt from the rate limit, not another method on it.
    return route.access === "probe" && !route.methods.includes(method) ? "public" : route.access;
  };
  // What every call is handed, whichever way it came in (`key`: its stream, or an HTTP/1.1
  // request): its request id and the gate's decision, which the interceptor enforces and whose
  // RateLimit headers it adds.
  const contextOf = (key: object, requestId: string) => {
    const values = createContextValues().set(requestIdKey, requestId);
    const decision = gate && decisions.get(key);
    return decision === undefined ? values : values.set(gateKey, decision);
  };
  const adapter = connectNodeAdapter({
    routes: (router) => {
      unary.routes(router);
      for (const h of router.handlers) {
        access.set(h.requestPath, {
          access: rpcAccess(procedureOf(h.service, h.method)),
          methods: h.allowedMethods,
        });
      }
    },
    ...options,
    contextValues: (req) =>
      contextOf(
        ("stream" in req && req.stream) || req,
        requestIdFrom(String(req.headers["x-request-id"] ?? "")),
      ),
    fallback: (req, res) => {
      const key = ("stream" in req && req.stream) || req;
      answerUnrouted(req, res, gate && decisions.get(key)).catch((error) => {
        logger.debug("grpc refusal not delivered", { error: String(error) });
      });
    },
  });
  // A response can end before the request body was read (a message over the limit, an unknown
  // method). The rest of the body is then read and dropped: left unread, it would hold the
  // connection's flow-control window and stall every other call on that connection. A client
  // that keeps sending past DRAIN_MAX_BYTES or DRAIN_MAX_MS gets RST_STREAM(NO_ERROR) (RFC 9113,
  // 8.1); that is not the first resort because some HTTP/2 clients (Deno's node:http2 among
  // them) then lose the trailers that carry the gRPC status.
  const serve = (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => {
    // HTTP/1.1 requests (TLS with ALPN http/1.1) have no stream and need none of this.
    const stream = req.stream as http2.ServerHttp2Stream | undefined;
    if (stream) drainOnceAnswered(stream);
    adapter(req, res);
  };
  const refuse = refusedCalls({ logger, drainOnceAnswered });
  // With a gate, each connection's `authorization` lines are counted as sent (field_lines.ts).
  const authorizationLines = new WeakMap<http2.Http2Session, FieldLineCounter>();
  const sentLines = (stream: http2.ServerHttp2Stream) => {
    const session = stream.session;
    return session === undefined ? undefined : authorizationLines.get(session)?.take(stream.id!);
  };
  const handler = gate === undefined
    ? serve
    : gatedRequests(gate, accessOf, decisions, serve, refuse, sentLines);
  const serverOptions: http2.ServerOptions = {
    settings: {
      maxConcurrentStreams: MAX_CONCURRENT_STREAMS,
      maxHeaderListSize: MAX_HEADER_LIST_BYTES,
    },
  };
  const server = config.tls
    ? await createTlsServer(config.tls, serverOptions, handler)
    : http2.createServer(serverOptions, handler);
  const lean = unaryStreams({
    methods: unary.methods,
    contextValues: contextOf,
    drainOnceAnswered,
    shutdownSignal: stopStreams.signal,
  });
  const compat = compatibilityListener(server);
  const take = deps.leanUnary === false ? () => false : lean;
  streamsFirstTo(
    server,
    gate === undefined
      ? take
      : gatedStreams(gate, accessOf, decisions, take, { compat, refuse, sentLines }),
    compat,
  );

  const refusals = createRefusalLog(logger, config.refusalLogIntervalMs);
  const guard = guardConnections({
    maxConnections: config.maxConnections ?? DEFAULT_CONNECTION_LIMITS.maxConnections,
    maxPerClient: config.maxConnectionsPerClient ?? DEFAULT_CONNECTION_LIMITS.maxPerClient,
    handshakeTimeoutMs: config.handshakeTimeoutMs ?? DEFAULT_CONNECTION_LIMITS.handshakeTimeoutMs,
    idleTimeoutMs: config.idleTimeoutMs ?? DEFAULT_CONNECTION_LIMITS.idleTimeoutMs,
  }, refusals);
  guard.watch(server);
  const sessions = guard.sessions;
  server.on("session", (session: http2.ServerHttp2Session) => {
    guard.track(session);
    const native = nativeSession(session);
    if (native) {
      let counter: FieldLineCounter | undefined;
      if (gate !== undefined) {
        counter = createFieldLineCounter("authorization");
        authorizationLines.set(session, counter);
      }
      ignoreClientGoaway(native, counter);
      coalesceWrites(session, native);
    } else {
      logger.debug(
        "grpc connection: client GOAWAY not filtered, writes not coalesced (node:http2 internals changed)",
      );
    }
    // A broken peer (bad frames, protocol errors) ends its own connection, never the server.
    session.on("error", (error: Error) => {
      logger.debug("grpc connection error", { error: error.message });
    });
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
      guard.destroyAll();
      await closed;
      refusals.close();
    })();
    return stopping;
  }
  return { url, shutdown };
}

/** HTTP/2 over TLS; ALPN offers h2 and, for gRPC-Web and Connect clients, http/1.1. */
async function createTlsServer(
  files: { certFile: string; keyFile: string },
  options: http2.ServerOptions,
  handler: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
): Promise<http2.Http2SecureServer> {
  const read = async (name: string, path: string) => {
    try {
      return await Deno.readTextFile(path);
    } catch (error) {
      throw new ConfigError(`invalid ${name}=${path}: ${(error as Error).message}`);
    }
  };
  const cert = await read("GRPC_TLS_CERT", files.certFile);
  const key = await read("GRPC_TLS_KEY", files.keyFile);
  try {
    // Parsed here so that a bad file stops start-up instead of failing every handshake.
    new X509Certificate(cert);
    createPrivateKey(key);
    return http2.createSecureServer({ ...options, cert, key, allowHTTP1: true }, handler);
  } catch (error) {
    throw new ConfigError(
      `invalid GRPC_TLS_CERT=${files.certFile} or GRPC_TLS_KEY=${files.keyFile}: ${
        (error as Error).message
      }`,
    );
  }
}

/**
 * Takes node:http2's compatibility API (the request and response wrappers) off the server's
 * streams: node:http2 installs it as the server's one `stream` listener when a `request` handler
 * is added. Returned bound to the server, for the streams the listener hands to it.
 */
function compatibilityListener(
  server: http2.Http2Server | http2.Http2SecureServer,
): (...args: Parameters<TakeStream>) => void {
  const listeners = server.listeners("stream");
  if (listeners.length !== 1) {
    throw new Error(
      `expected node:http2's one compatibility stream listener, found ${listeners.length}`,
    );
  }
  server.removeAllListeners("stream");
  const compat = listeners[0] as (...args: Parameters<TakeStream>) => void;
  return (stream, headers, flags, rawHeaders) =>
    compat.call(server, stream, headers, flags, rawHeaders);
}

/**
 * Puts `take` in front of the compatibility API: a stream it takes never gets the request and
 * response wrappers; every stream it does not take goes to `compat`.
 */
function streamsFirstTo(
  server: http2.Http2Server | http2.Http2SecureServer,
  take: TakeStream,
  compat: (...args: Parameters<TakeStream>) => void,
): void {
  server.on(
    "stream",
    (
      stream: http2.ServerHttp2Stream,
      headers: http2.IncomingHttpHeaders,
      flags: number,
      rawHeaders: string[],
    ) => {
      stream.on("error", ignoreStreamError);
      if (!take(stream, headers, flags, rawHeaders)) compat(stream, headers, flags, rawHeaders);
    },
  );
}

/**
 * When a connection fails (the client reset it, or went away while frames were being written),
 * node:http2 destroys each of its streams with the connection's error; a stream with no `error`
 * listener would throw it out of the event loop and take the process down. The connection's
 * error is logged once by its session; a stream has nothing to add.
 */
function ignoreStreamError(): void {}

/**
 * Feeds the connection's bytes to nghttp2 without the client's GOAWAY frames (see
 * goaway_filter.ts: Deno 2.9.6 can abort while processing one). The polyfill hands each chunk
 * the socket reads to its native session handle's `receive`; the handle's own `receive` is
 * wrapped.
 */
function ignoreClientGoaway(native: NativeSession, observer?: FieldLineCounter): void {
  const receive = native.receive;
  const filter = createGoawayFilter(observer);
  native.receive = (chunk) => receive.call(native, filter(chunk));
}

/**
 * Once the stream's answer and trailers are sent (its writable side finishes), drains what is
 * left of its request body (`drainRequest`).
 */
function drainOnceAnswered(stream: http2.ServerHttp2Stream): void {
  stream.once("finish", () => {
    // Connect may already have released the compat request; the stream itself tells.
    if (!stream.readableEnded && !stream.destroyed) drainRequest(stream);
  });
}

/** Reads and drops what is left of a request body, within limits (see the listener). */
function drainRequest(stream: http2.ServerHttp2Stream): void {
  let drained = 0;
  const cleanup = () => {
    clearTimeout(timer);
    stream.off("readable", read);
  };
  const refuse = () => {
    cleanup();
    if (!stream.closed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
  };
  // Paused-mode reads: the compat request Connect released would pause a flowing stream again.
  function read() {
    for (let chunk; (chunk = stream.read()) !== null;) {
      drained += (chunk as Uint8Array).byteLength;
      if (drained > DRAIN_MAX_BYTES) return refuse();
    }
  }
  const timer = setTimeout(refuse, DRAIN_MAX_MS);
  stream.on("readable", read);
  stream.once("end", cleanup);
  stream.once("close", cleanup);
  read();
}
