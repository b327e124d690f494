import type http2 from "node:http2";
import type { Decision, Gate } from "../lib/gate.ts";

/** The gate's decision of a call: known at once, or pending while a token is verified. */
export type PendingDecision = Decision | Promise<Decision>;

type Take = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean;

function pathOf(path: string | undefined): string {
  const p = path ?? "/";
  const query = p.indexOf("?");
  return query === -1 ? p : p.slice(0, query);
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Puts the gate (lib/gate.ts) in front of every HTTP/2 stream of the gRPC listener, the fast
 * path included. gRPC sends the token as `authorization` metadata, an HTTP/2 header. The
 * decision is recorded per stream; only a stream admitted at once (no token, or one verified
 * before) is offered to `take` (the fast path). Every other stream goes on to Connect at once,
 * whose interceptor awaits the decision and fails a refused call with the gate's error in the
 * client's protocol (UNAUTHENTICATED, PERMISSION_DENIED, RESOURCE_EXHAUSTED).
 */
export function gatedStreams(
  gate: Gate,
  decisions: WeakMap<object, PendingDecision>,
  take: Take,
): Take {
  return (stream, headers) => {
    const decision = gate.decide({
      method: first(headers[":method"]) ?? "POST",
      path: pathOf(first(headers[":path"])),
      authorization: first(headers.authorization),
      address: () => stream.session?.socket?.remoteAddress ?? "",
    });
    decisions.set(stream, decision);
    return !(decision instanceof Promise) && decision.ok && take(stream, headers);
  };
}

/**
 * The same gate for requests that reach the compatibility handler without a stream decision:
 * HTTP/1.1 requests (TLS with ALPN http/1.1).
 */
export function gatedRequests(
  gate: Gate,
  decisions: WeakMap<object, PendingDecision>,
  serve: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
): (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void {
  return (req, res) => {
    const key = req.stream ?? req;
    if (!decisions.has(key)) {
      decisions.set(
        key,
        gate.decide({
          method: req.method,
          path: pathOf(req.url),
          authorization: first(req.headers.authorization),
          address: () => req.socket?.remoteAddress ?? "",
        }),
      );
    }
    serve(req, res);
  };
}
