import type http2 from "node:http2";
import type net from "node:net";
import type { RefusalLog } from "./refusal_log.ts";

/** How many connections the gRPC listener keeps, and for how long. */
interface ConnectionLimits {
  /** Connections open at once; more are closed at once. */
  maxConnections: number;
  /** Connections open at once from one client address (IPv6: one /64); more are closed at once. */
  maxPerClient: number;
  /** A connection that has not sent its preface and SETTINGS and acknowledged ours by then is closed. */
  handshakeTimeoutMs: number;
  /** A connection without a call in flight for this long is sent GOAWAY and closed. */
  idleTimeoutMs: number;
}

/** The listener's defaults (`GRPC_MAX_CONNECTIONS_PER_CLIENT`, `GRPC_*_TIMEOUT_S`). */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxConnections: 1000,
  maxPerClient: 100,
  handshakeTimeoutMs: 5_000,
  idleTimeoutMs: 5 * 60_000,
};

// After an idle connection's GOAWAY, time for the client to read it and close the connection
// itself; a client that has not by then has it closed. Closing at once could turn a request
// the client sent meanwhile into a TCP reset that hides the GOAWAY, and the client could not
// tell that the request is safe to retry.
const IDLE_CLOSE_GRACE_MS = 1_000;

/** Admits the listener's connections and ends the ones that are not used. */
interface ConnectionGuard {
  /**
   * Puts the caps in front of the server's own `connection` handling: a connection over a cap
   * is closed as it is accepted, before TLS or HTTP/2 spend anything on it.
   */
  watch(server: net.Server): void;
  /** Arms the handshake and idle timers of an admitted connection's HTTP/2 session. */
  track(session: http2.ServerHttp2Session): void;
  /** The HTTP/2 sessions open now. */
  readonly sessions: ReadonlySet<http2.ServerHttp2Session>;
  /**
   * Closes every connection's socket at once. A session closed gracefully only half-closes its
   * socket and waits for the client to close its side, which a client may never do.
   */
  destroyAll(): void;
}

interface Tracked {
  /** Streams open now. */
  open: number;
  /** When the last stream closed (or the connection opened), from Date.now(). */
  lastActive: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * Connection hygiene of the HTTP/2 listener: a global cap, a cap per client address well
 * below it (so one address cannot take every slot), a deadline for the HTTP/2 handshake (so
 * connections that never speak HTTP/2 do not hold slots), and an idle timeout that counts calls,
 * not frames.
 *
 * Why its own idle timeout: node:http2's `session.setTimeout` is reset by any frame, PINGs
 * included (Deno 2.9.6 too), so a client that only sends PINGs kept a connection, and its slot,
 * for ever. Here a connection is idle while it has no stream open, whatever else it sends,
 * which is gRPC's own meaning (grpc-go's MaxConnectionIdle).
 */
export function guardConnections(limits: ConnectionLimits, refusals: RefusalLog): ConnectionGuard {
  const sessions = new Set<http2.ServerHttp2Session>();
  const perClient = new Map<string, number>();
  const sockets = new Set<net.Socket>();

  function watch(server: net.Server) {
    // net.Server's `connection` listeners: node:http2's (or TLS's) session set-up.
    const listeners = server.listeners("connection") as ((socket: net.Socket) => void)[];
    server.removeAllListeners("connection");
    server.on("connection", (socket: net.Socket) => {
      const client = clientOf(socket.remoteAddress);
      const reason = sockets.size >= limits.maxConnections
        ? "connection-limit"
        : (perClient.get(client) ?? 0) >= limits.maxPerClient
        ? "client-limit"
        : undefined;
      if (reason !== undefined) {
        refusals.refused(reason, client);
        socket.on("error", () => {}); // a reset from the refused client is no one's business
        socket.destroy();
        return;
      }
      sockets.add(socket);
      perClient.set(client, (perClient.get(client) ?? 0) + 1);
      socket.once("close", () => {
        sockets.delete(socket);
        const left = (perClient.get(client) ?? 1) - 1;
        if (left === 0) perClient.delete(client);
        else perClient.set(client, left);
      });
      for (const listener of listeners) listener.call(server, socket);
    });
  }

  function track(session: http2.ServerHttp2Session) {
    sessions.add(session);
    const tracked: Tracked = { open: 0, lastActive: Date.now(), timer: undefined };

    // The handshake: the client's preface and SETTINGS, and its acknowledgement of ours.
    let handshake = 0;
    const handshakeTimer = setTimeout(() => {
      refusals.refused("handshake-timeout", clientOf(session.socket?.remoteAddress));
      session.destroy();
    }, limits.handshakeTimeoutMs);
    const settled = (step: number) => () => {
      handshake |= step;
      if (handshake === 3) clearTimeout(handshakeTimer);
    };
    session.once("remoteSettings", settled(1));
    session.once("localSettings", settled(2));

    // One handler per connection, added with `on` (a stream closes once): nothing is allocated
    // per stream.
    const closed = () => {
      tracked.open--;
      tracked.lastActive = Date.now();
      if (tracked.open === 0 && tracked.timer === undefined) {
        idleAfter(session, tracked, limits.idleTimeoutMs);
      }
    };
    session.on("stream", (stream: http2.ServerHttp2Stream) => {
      tracked.open++;
      stream.on("close", closed);
    });
    idleAfter(session, tracked, limits.idleTimeoutMs);

    session.once("close", () => {
      clearTimeout(handshakeTimer);
      clearTimeout(tracked.timer);
      sessions.delete(session);
    });
  }

  // One timer per connection, armed while no stream is open; a stream opening does not touch
  // it (the hot path stays a counter), the check at expiry does.
  function idleAfter(session: http2.ServerHttp2Session, tracked: Tracked, ms: number) {
    tracked.timer = setTimeout(() => {
      tracked.timer = undefined;
      if (session.destroyed || tracked.open > 0) return; // the last stream to close re-arms it
      const idleFor = Date.now() - tracked.lastActive;
      if (idleFor < limits.idleTimeoutMs) {
        return idleAfter(session, tracked, limits.idleTimeoutMs - idleFor);
      }
      // GOAWAY tells the client that no call of its was cut short; it reconnects when it needs to.
      session.goaway();
      tracked.timer = setTimeout(() => session.destroy(), IDLE_CLOSE_GRACE_MS);
    }, ms);
  }

  function destroyAll() {
    for (const socket of sockets) socket.destroy();
  }

  return { watch, track, sessions, destroyAll };
}

/**
 * The client a connection counts against: its IP address; an IPv4-mapped IPv6 address as the
 * IPv4 address; an IPv6 address by its /64 prefix, the block one host or customer usually holds.
 */
export function clientOf(address: string | undefined): string {
  if (!address) return "unknown";
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(":")) return address;
  const [head = "", tail = ""] = address.split("%")[0]!.toLowerCase().split("::");
  const front = head === "" ? [] : head.split(":");
  const back = tail === "" ? [] : tail.split(":");
  const groups = address.includes("::")
    ? [...front, ...Array(Math.max(0, 8 - front.length - back.length)).fill("0"), ...back]
    : front;
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, "")).join(":")}::/64`;
}
