import type http2 from "node:http2";
import { setImmediate } from "node:timers";

/**
 * The parts of Deno 2.9.6's native HTTP/2 session handle (the object node:http2 keeps under its
 * `kHandle` symbol) the listener hooks into. Each is an own property the polyfill calls through
 * the handle, so replacing it changes what the polyfill does.
 */
export interface NativeSession {
  /** Feeds bytes the socket read to nghttp2. */
  receive(chunk: Uint8Array): unknown;
  /** Writes every frame nghttp2 has ready to the socket, one socket write per frame. */
  sendPending(): void;
  /** Whether nghttp2 still wants to read or write; false ends the connection. */
  hasPendingData(): boolean;
  /** Ends the native session (the polyfill calls it once the session is destroyed). */
  destroy?: (...args: unknown[]) => unknown;
}

/** The session's native handle, or undefined when it is not where Deno 2.9.6 keeps it. */
export function nativeSession(session: http2.ServerHttp2Session): NativeSession | undefined {
  const key = Object.getOwnPropertySymbols(session).find((s) => s.description === "kHandle");
  const handle = key && (session as unknown as Record<symbol, unknown>)[key];
  if (typeof handle !== "object" || handle === null) return undefined;
  const native = handle as Partial<NativeSession>;
  const complete = typeof native.receive === "function" &&
    typeof native.sendPending === "function" && typeof native.hasPendingData === "function";
  return complete ? native as NativeSession : undefined;
}

/**
 * Sends what nghttp2 has ready once per turn of the event loop, in one socket write, instead of
 * once per frame as it is produced.
 *
 * Why: Deno 2.9.6's node:http2 writes to the socket every time a stream responds, ends or sends
 * trailers: three writes (three system calls) per unary gRPC call, a large share of a bare
 * server's CPU under multiplexed load (docs/bench.md). Collected per turn and written corked
 * (one writev), the frames of all calls answered in that turn leave together.
 *
 * What must stay immediate stays so: the polyfill asks `hasPendingData()` right after feeding
 * received bytes to decide whether the connection is finished, so that question first sends
 * whatever is pending (SETTINGS and PING acknowledgements, window updates), as it would without
 * coalescing.
 */
export function coalesceWrites(session: http2.ServerHttp2Session, native: NativeSession): void {
  const send = native.sendPending;
  const hasPendingData = native.hasPendingData;
  let scheduled = false;
  function flush() {
    if (!scheduled) return;
    scheduled = false;
    // A destroyed session has written its last frames (the polyfill drains them itself).
    if (session.destroyed) return;
    const socket = session.socket;
    // The peer may have gone since the frames were produced: its FIN ends the socket's
    // writable side, and a write after that fails the socket with EPIPE, which the polyfill
    // turns into an error on every stream of the connection. Nothing can reach that client any
    // more, so its frames are dropped and the connection's streams are closed now.
    if (!writable(socket)) {
      session.destroy();
      return;
    }
    socket.cork();
    let failed = false;
    try {
      send.call(native);
    } catch {
      failed = true;
    } finally {
      // Through the session's socket proxy, which throws once the session let go of it.
      if (!session.destroyed) socket.uncork();
    }
    // A socket that fails under the write belongs to this connection alone.
    if (failed) session.destroy();
  }
  native.sendPending = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };
  native.hasPendingData = () => {
    flush();
    return hasPendingData.call(native);
  };
  // `session.close()` on a session with no stream open destroys it at once, and the polyfill
  // writes a destroyed session's pending frames itself only when it was not closed first: the
  // GOAWAY of a graceful close (shutdown) would never leave. What is pending is written before
  // the native session goes.
  const destroy = native.destroy;
  if (typeof destroy === "function") {
    native.destroy = (...args: unknown[]) => {
      scheduled = false;
      writeLast();
      return destroy.apply(native, args);
    };
  }
  function writeLast() {
    try {
      if (writable(session.socket)) send.call(native);
    } catch {
      // The socket is gone (or the session let go of it): there is no one left to tell.
    }
  }
}

/** Whether bytes written to the connection's socket can still reach the peer. */
function writable(socket: http2.ServerHttp2Session["socket"]): boolean {
  const s = socket as unknown as {
    destroyed?: boolean;
    writable?: boolean;
    writableEnded?: boolean;
  };
  return !s.destroyed && s.writable !== false && s.writableEnded !== true;
}
