import type { ConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { type HandlerCall, wrapHandlers } from "./wrap_handlers.ts";

import { MAX_TIMER_MS } from "../../lib/timers.ts";

export { MAX_TIMER_MS };
// A Map, like every table looked up by a string from outside (here the header's unit).
const GRPC_UNIT_MS = new Map([
  ["H", 3_600_000],
  ["M", 60_000],
  ["S", 1000],
  ["m", 1],
  ["u", 0.001],
  ["n", 0.000001],
]);

/**
 * Registers `routes` so that a call whose deadline lies further away than a timer can wait runs
 * without a deadline, instead of failing at once.
 *
 * Why: gRPC allows `grpc-timeout` up to 99,999,999 hours and Connect `connect-timeout-ms` up to
 * ten digits; Connect-ES arms a timer for the whole timeout, and a timer past 2^31 − 1 ms fires
 * after 1 ms (TimeoutOverflowWarning), so such a call would end DEADLINE_EXCEEDED after 1 ms: a
 * stream such as Health.Watch at once, a unary call whenever it took longer than that.
 */
export function withLongTimeoutsUnbounded(
  routes: (router: ConnectRouter) => void,
): (router: ConnectRouter) => void {
  return wrapHandlers(routes, unboundedWhenLong);
}

function unboundedWhenLong(handler: UniversalHandler): HandlerCall {
  return (request) => {
    const header = request.header;
    const grpc = grpcTimeoutMs(header.get("grpc-timeout"));
    const connect = header.get("connect-timeout-ms");
    const tooLong = (grpc !== undefined && grpc > MAX_TIMER_MS) ||
      (connect !== null && /^[0-9]{1,10}$/.test(connect) && Number(connect) > MAX_TIMER_MS);
    if (!tooLong) return handler(request);
    const kept = new Headers(header);
    kept.delete("grpc-timeout");
    kept.delete("connect-timeout-ms");
    return handler({ ...request, header: kept });
  };
}

/** A well-formed `grpc-timeout` in milliseconds; undefined otherwise (Connect judges those). */
export function grpcTimeoutMs(value: string | null): number | undefined {
  const match = value === null ? null : /^([0-9]{1,8})([HMSmun])$/.exec(value);
  return match ? Number(match[1]) * GRPC_UNIT_MS.get(match[2]!)! : undefined;
}
