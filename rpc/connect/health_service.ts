import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  Health,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../gen/grpc/health/v1/health_pb.ts";

export { ServingStatus };

/** Serving status per service name; "" is the whole server. Watchers hear every change. */
export interface HealthState {
  /** The status of a service, or undefined when the server does not know it. */
  get(service: string): ServingStatus | undefined;
  /** Sets every known service (and "") to one status, e.g. NOT_SERVING while shutting down. */
  setAll(status: ServingStatus): void;
  /** Calls `listener` after every change; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void;
}

/** Health state for the given services (plus ""), all SERVING. */
export function createHealthState(services: readonly string[]): HealthState {
  const statuses = new Map<string, ServingStatus>(
    ["", ...services].map((name) => [name, ServingStatus.SERVING]),
  );
  const listeners = new Set<() => void>();
  return {
    get: (service) => statuses.get(service),
    setAll(status) {
      for (const name of statuses.keys()) statuses.set(name, status);
      for (const listener of [...listeners]) listener();
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/**
 * `grpc.health.v1.Health`: Check answers NOT_FOUND for an unknown service (as the protocol
 * says); Watch sends the current status (SERVICE_UNKNOWN for an unknown one), then each change,
 * until the client leaves or the server shuts down (then UNAVAILABLE, so the client reconnects
 * elsewhere).
 */
export function healthService(state: HealthState): ServiceImpl<typeof Health> {
  return {
    check(request) {
      const status = state.get(request.service);
      if (status === undefined) {
        throw new ConnectError(`Unknown service "${request.service}".`, Code.NotFound);
      }
      return { status };
    },
    async *watch(request, context) {
      let wake: () => void = () => {};
      const unsubscribe = state.subscribe(() => wake());
      const onAbort = () => wake();
      context.signal.addEventListener("abort", onAbort);
      try {
        let last: ServingStatus | undefined;
        for (;;) {
          const changed = new Promise<void>((resolve) => (wake = resolve));
          const status = state.get(request.service) ?? ServingStatus.SERVICE_UNKNOWN;
          if (status !== last) {
            last = status;
            yield { status };
          }
          // Checked after the yield, so a last change (NOT_SERVING at shutdown) is still sent.
          if (context.signal.aborted) break;
          await changed;
        }
      } finally {
        unsubscribe();
        context.signal.removeEventListener("abort", onAbort);
      }
      // Only an aborted call gets here: the reason says why (deadline, cancel, shutdown).
      const reason: unknown = context.signal.reason;
      throw reason instanceof ConnectError
        ? reason
        : new ConnectError("The call was cancelled.", Code.Canceled);
    },
  };
}
