import { Code, type ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "../../lib/log.ts";
import { logRpcAccess } from "../../lib/access_log.ts";
import { requestIdFrom } from "../../lib/http/request_id.ts";
import { toConnectError } from "./errors.ts";
import type { Decision } from "../../security/gate.ts";
import { rpcSystemOf, startRpcSpan, TRACING } from "../../lib/tracing.ts";
import { callerKey } from "./caller.ts";

/** The request id of a call, set by whoever accepted the request (listener or Hono route). */
export const requestIdKey = createContextKey<string | undefined>(undefined, {
  description: "request id",
});

/**
 * The gate's decision of a call (security/gate.ts), set by whoever accepted the request. The
 * interceptor hands an admitted call its caller (./caller.ts) and puts its RateLimit headers on
 * the answer. A refused call never reaches Connect (each listener answers it before, unread);
 * were one to, the interceptor would still fail it with the gate's error.
 */
export const gateKey = createContextKey<Decision | Promise<Decision> | undefined>(undefined, {
  description: "gate decision",
});

/**
 * The one server interceptor of every RPC: echoes `x-request-id`, renders thrown errors as gRPC
 * statuses (lib/errors.ts codes mapped, unexpected ones masked), and, when `accessLog` is set,
 * writes one `rpc` log line per call with its gRPC code and duration (the HTTP app logs its own
 * requests, so the main port passes false).
 */
export function serverInterceptor(options: { logger: Logger; accessLog: boolean }): Interceptor {
  const { logger, accessLog } = options;
  return (next) => async (req) => {
    const started = performance.now();
    const requestId = req.contextValues.get(requestIdKey) ??
      requestIdFrom(req.header.get("x-request-id"));
    const procedure = `${req.service.typeName}/${req.method.name}`;
    const span = TRACING
      ? startRpcSpan(
        rpcSystemOf(req.header.get("content-type")),
        req.service.typeName,
        req.method.name,
        requestId,
        started,
        { traceparent: req.header.get("traceparent"), tracestate: req.header.get("tracestate") },
      )
      : undefined;
    const done = (code: Code | undefined) => {
      span?.end({ code: code ?? 0 });
      if (!accessLog) return;
      logRpcAccess(logger, { procedure, code, started, requestId, traceId: span?.traceId });
    };
    const fail = (error: unknown): ConnectError => {
      const connectError = toConnectError(error, { logger, requestId, procedure });
      connectError.metadata.set("x-request-id", requestId);
      done(connectError.code);
      return connectError;
    };
    try {
      const pending = req.contextValues.get(gateKey);
      const decision = pending instanceof Promise ? await pending : pending;
      if (decision?.ok === false) throw decision.error;
      if (decision?.ok) req.contextValues.set(callerKey, decision.caller);
      const res = await next(req);
      if (decision?.headers) {
        for (const name in decision.headers) res.header.set(name, decision.headers[name]!);
      }
      res.header.set("x-request-id", requestId);
      if (!res.stream) {
        done(undefined);
        return res;
      }
      const finished = () => done(req.signal.aborted ? Code.Canceled : undefined);
      return { ...res, message: mapStreamErrors(res.message, fail, finished) };
    } catch (error) {
      throw fail(error);
    }
  };
}

async function* mapStreamErrors<T>(
  messages: AsyncIterable<T>,
  fail: (error: unknown) => ConnectError,
  finished: () => void,
): AsyncIterable<T> {
  let failed = false;
  try {
    yield* messages;
  } catch (error) {
    failed = true;
    throw fail(error);
  } finally {
    // Also reached when the client goes away mid-stream (the iterator is returned early).
    if (!failed) finished();
  }
}
