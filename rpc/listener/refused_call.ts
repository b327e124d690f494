import type http2 from "node:http2";
import type { Logger } from "../../lib/log.ts";
import { logRpcAccess } from "../../lib/access_log.ts";
import { requestIdFrom } from "../../lib/http/request_id.ts";
import { rpcSystemOf, startRpcSpan, TRACING } from "../../lib/tracing.ts";
import { toConnectError } from "../connect/errors.ts";
import { refuseCall } from "../connect/unknown_method.ts";
import type { Refuse } from "./gated.ts";

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * How the gRPC listener answers a call the gate refused (rpc/listener/gated.ts): in the client's
 * protocol from its headers alone (rpc/connect/unknown_method.ts `refuseCall`), with its request
 * id, one `rpc` log line and span as every call has; the body, never read, is drained once the
 * answer is out (`drainOnceAnswered`), so it does not hold the connection's flow-control window.
 */
export function refusedCalls(deps: {
  logger: Logger;
  drainOnceAnswered: (stream: http2.ServerHttp2Stream) => void;
}): Refuse {
  const { logger } = deps;
  return (request, answerOn, error, started) => {
    const { headers } = request;
    const requestId = requestIdFrom(first(headers["x-request-id"]));
    const procedure = request.url.split("?")[0]!.slice(1, 201);
    const connectError = toConnectError(error, { logger, requestId, procedure });
    connectError.metadata.set("x-request-id", requestId);
    if ("stream" in answerOn) {
      const { stream } = answerOn;
      if (stream.destroyed) return;
      refuseCall({ method: request.method, headers, stream }, undefined, connectError);
      deps.drainOnceAnswered(stream);
    } else {
      refuseCall({ method: request.method, headers }, answerOn.res, connectError);
    }
    const slash = procedure.indexOf("/");
    const span = TRACING
      ? startRpcSpan(
        rpcSystemOf(first(headers["content-type"]) ?? null),
        procedure.slice(0, slash === -1 ? undefined : slash),
        slash === -1 ? "" : procedure.slice(slash + 1),
        requestId,
        started,
        { traceparent: first(headers.traceparent), tracestate: first(headers.tracestate) },
      )
      : undefined;
    span?.end({ code: connectError.code });
    logRpcAccess(logger, {
      procedure,
      code: connectError.code,
      started,
      requestId,
      traceId: span?.traceId,
    });
  };
}
