import type http2 from "node:http2";
import type { Access } from "../../security/access.ts";
import type { Decision, Gate } from "../../security/gate.ts";
import { canonicalRequestPath, notCanonical } from "../../security/target.ts";
import { combinedAuthorization } from "../../security/authorization.ts";

/** The gate's decision of a call: known at once, or pending while a token is verified. */
export type PendingDecision = Decision | Promise<Decision>;

/** A listener of node:http2's `stream` event; true when it took the stream. */
export type TakeStream = (
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  flags: number,
  rawHeaders: string[],
) => boolean;

/** What the service that answers `method` on a path declares ("authenticated" when none does). */
type AccessOf = (method: string, path: string) => Access;

/**
 * How many `authorization` lines the client sent for a stream, counted from its header block
 * (rpc/http2/field_lines.ts); undefined when unknown (the lines delivered are then all there is).
 */
export type SentLines = (stream: http2.ServerHttp2Stream) => number | undefined;

/**
 * How the listener answers a call refused before any service saw it, in the client's protocol,
 * without reading its body; `started` is when the request arrived.
 */
export type Refuse = (
  request: { url: string; method: string; headers: http2.IncomingHttpHeaders },
  answerOn: { stream: http2.ServerHttp2Stream } | { res: http2.Http2ServerResponse },
  error: unknown,
  started: number,
) => void;

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The `authorization` lines of a request as node:http2 delivered them (`headers` keeps only the
 * first; the raw list has them all), combined for the gate as the HTTP port combines them, with
 * the lines the client sent but nghttp2 dropped (`sent`, counted from the header block) joined
 * in as empty ones (security/authorization.ts).
 */
function authorizationOf(
  first: string | undefined,
  rawHeaders: readonly string[] | undefined,
  sent: number | undefined,
): string | undefined {
  if (rawHeaders === undefined) {
    return combinedAuthorization(first === undefined ? [] : [first], sent);
  }
  const lines: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 13 && name.toLowerCase() === "authorization") {
      lines.push(rawHeaders[i + 1]!);
    }
  }
  return combinedAuthorization(lines, sent);
}

/**
 * The gate's decision for a request: its target made canonical first (a refusal, still charged
 * to the client's address, when it is not), then what the service that answers its path
 * declares for its method.
 */
function decide(
  gate: Gate,
  accessOf: AccessOf,
  method: string,
  target: string,
  authorization: string | undefined,
  address: () => string,
): PendingDecision {
  const path = canonicalRequestPath(target);
  if (path === undefined) return gate.refuse(address, notCanonical(target));
  return gate.decide({ access: accessOf(method, path), authorization, address });
}

/**
 * Puts the gate (security/gate.ts) in front of every HTTP/2 stream of the gRPC listener, the fast
 * path included. gRPC sends the token as `authorization` metadata, an HTTP/2 header. A refused
 * call is answered here (`refuse`), before any service sees it and without reading its body
 * (UNAUTHENTICATED, PERMISSION_DENIED, RESOURCE_EXHAUSTED, INVALID_ARGUMENT in the client's
 * protocol). A stream admitted at once (no token, or one verified before) is offered to `take`
 * (the lean unary path), else to `compat`; one whose token is still being verified waits, unread,
 * for the decision. Admitted decisions are recorded per stream (their RateLimit headers).
 */
export function gatedStreams(
  gate: Gate,
  accessOf: AccessOf,
  decisions: WeakMap<object, PendingDecision>,
  take: TakeStream,
  then: {
    compat: (...args: Parameters<TakeStream>) => void;
    refuse: Refuse;
    sentLines: SentLines;
  },
): TakeStream {
  const { compat, refuse, sentLines } = then;
  return (stream, headers, flags, rawHeaders) => {
    const method = first(headers[":method"]) ?? "";
    const target = first(headers[":path"]) ?? "/";
    const decision = decide(
      gate,
      accessOf,
      method,
      target,
      authorizationOf(first(headers.authorization), rawHeaders, sentLines(stream)),
      () => stream.session?.socket?.remoteAddress ?? "",
    );
    if (decision instanceof Promise) {
      // Handed to the compatibility layer at once, so that its request sees the body's end
      // whenever that comes; the request handler (`gatedRequests`) waits for the decision before
      // anything reads the body.
      decisions.set(stream, decision);
      compat(stream, headers, flags, rawHeaders);
      return true;
    }
    if (!decision.ok) {
      refuse({ url: target, method, headers }, { stream }, decision.error, performance.now());
      return true;
    }
    decisions.set(stream, decision);
    return take(stream, headers, flags, rawHeaders);
  };
}

/**
 * The same gate for requests that reach the compatibility handler without a stream decision:
 * HTTP/1.1 requests (TLS with ALPN http/1.1).
 */
export function gatedRequests(
  gate: Gate,
  accessOf: AccessOf,
  decisions: WeakMap<object, PendingDecision>,
  serve: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void,
  refuse: Refuse,
  sentLines: SentLines,
): (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void {
  return (req, res) => {
    const key = req.stream ?? req;
    const known = decisions.get(key);
    if (known !== undefined && !(known instanceof Promise)) return serve(req, res);
    const started = performance.now();
    const request = { url: req.url, method: req.method, headers: req.headers };
    // An HTTP/2 refusal is written on the stream (trailers-only), an HTTP/1.1 one as a response.
    const answerOn = req.stream ? { stream: req.stream } : { res };
    const settle = (decided: Decision | { ok: false; error: unknown }) => {
      if (req.stream?.destroyed) return;
      if (!decided.ok) return refuse(request, answerOn, decided.error, started);
      decisions.set(key, decided);
      serve(req, res);
    };
    const decision = known ?? decide(
      gate,
      accessOf,
      req.method,
      req.url,
      authorizationOf(
        first(req.headers.authorization),
        req.rawHeaders,
        req.stream ? sentLines(req.stream) : undefined,
      ),
      () => req.socket?.remoteAddress ?? "",
    );
    if (decision instanceof Promise) {
      decision.then(settle, (error: unknown) => settle({ ok: false, error }));
    } else settle(decision);
  };
}
