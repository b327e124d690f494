import { Code } from "@connectrpc/connect";
import { type Logger, msSince } from "./log.ts";
import { nameHttpSpan, TRACING } from "./tracing.ts";

/** One HTTP request as the access log records it. */
interface HttpAccess {
  method: string;
  /** The canonical path, without the query (it may carry what does not belong in logs). */
  path: string;
  /** The template of the route that answered (`/addresses/{id}`); none for 404, 405, refusals. */
  route: string | undefined;
  status: number;
  /** `performance.now()` when the request arrived. */
  started: number;
  requestId: string;
}

/**
 * Writes the access-log line of an HTTP request and, with tracing on, names its span after the
 * route: every HTTP answer (the app's, and those given in front of the router) is logged here,
 * so the lines cannot differ by who answered.
 */
export function logHttpAccess(logger: Logger, access: HttpAccess): void {
  logger.request({
    method: access.method,
    path: access.path,
    status: access.status,
    durationMs: msSince(access.started),
    requestId: access.requestId,
    traceId: TRACING ? nameHttpSpan(access.method, access.route, access.requestId) : undefined,
  });
}

/** One RPC as the gRPC listener's log records it. */
interface RpcAccess {
  /** `package.Service/method`. */
  procedure: string;
  /** The gRPC status; undefined is OK. */
  code: Code | undefined;
  started: number;
  requestId: string;
  /** The call's span, when tracing is on. */
  traceId: string | undefined;
}

/** Writes the `rpc` line of one call (Connect's handler and the lean unary path alike). */
export function logRpcAccess(logger: Logger, access: RpcAccess): void {
  logger.info("rpc", {
    procedure: access.procedure,
    code: access.code === undefined ? "ok" : Code[access.code],
    durationMs: msSince(access.started),
    requestId: access.requestId,
    traceId: access.traceId,
  });
}
