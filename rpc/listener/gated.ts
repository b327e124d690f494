import type http2 from "node:http2";
import type { Access } from "../../security/access.ts";
import type { Decision, Gate } from "../../security/gate.ts";
import { canonicalRequestPath, notCanonical } from "../../security/target.ts";

/** The gate's decision of a call: known at once, or pending while a token is verified. */
export type PendingDecision = Decision | Promise<Decision>;

type Take = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean;

/** What the service that answers a path declares ("authenticated" when none does). */
export type AccessOfPath = (path: string) => Access;

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The gate's decision for a request target: the target made canonical first (a refusal when it
 * is not), then what the service that answers its path declares.
 */
function decide(
  gate: Gate,
  accessOf: AccessOfPath,
  target: string,
  authorization: string | undefined,
  address: () => string,
): PendingDecision {
  const path = canonicalRequestPath(target);
  if (path === undefined) return { ok: false, error: notCanonical(target) };
  return gate.decide({ access: accessOf(path), authorization, address });
}

/**
 * Puts the gate (security/gate.ts) in front of every HTTP/2 stream of the gRPC listener, the fast
 * path included. gRPC sends the token as `authorization` metadata, an HTTP/2 header. The
 * decision is recorded per stream; only a stream admitted at once (no token, or one verified
 * before) is offered to `take` (the fast path). Every other stream goes on to Connect at once,
 * whose interceptor awaits the decision and fails a refused call with the gate's error in the
 * client's protocol (UNAUTHENTICATED, PERMISSION_DENIED, RESOURCE_EXHAUSTED); a path no service
 * handles gets the refusal from the listener's fallback.
 */
export function gatedStreams(
  gate: Gate,
  accessOf: AccessOfPath,
  decisions: WeakMap<object, PendingDecision>,
  take: Take,
): Take {
  return (stream, headers) => {
    const decision = decide(
      gate,
      accessOf,
      first(headers[":path"]) ?? "/",
      first(headers.authorization),
      () => stream.session?.socket?.remoteAddress ?? "",
    );
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
  accessOf: AccessOfPath,
  decisions: WeakMap<object, PendingDecision>,
  serve: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
): (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void {
  return (req, res) => {
    const key = req.stream ?? req;
    if (!decisions.has(key)) {
      decisions.set(
        key,
        decide(
          gate,
          accessOf,
          req.url,
          first(req.headers.authorization),
          () => req.socket?.remoteAddress ?? "",
        ),
      );
    }
    serve(req, res);
  };
}
