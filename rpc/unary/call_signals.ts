import { Code, ConnectError } from "@connectrpc/connect";

/** The abort signal of one unary call in flight, and what ends it. */
export interface CallSignal {
  /** The handler context's signal: aborted at the deadline, when the client goes, at shutdown. */
  signal: AbortSignal;
  /** The client went away before the answer. */
  clientGone(): void;
  /** The call is answered: the deadline's timer stops, shutdown no longer concerns it. */
  close(): void;
}

/**
 * Signals for the lean path's calls, with the reasons Connect's handlers give: the deadline
 * (DEADLINE_EXCEEDED, "the operation timed out"), the server's shutdown (its signal's reason),
 * the client's leaving (CANCELED).
 *
 * Why not Connect's own (createHandlerContext): it links three signals per call with event
 * listeners and aborts the call's signal without a reason once it is answered, which builds a
 * DOMException with a stack on every call (about 4% of a call's CPU under load). Here a call
 * costs one AbortController, a timer only with a deadline, and a set entry for the shutdown;
 * an answered call's signal is left as it is (no one listens to it any more).
 */
export function callSignals(
  shutdown: AbortSignal | undefined,
): { open(timeoutMs?: number): CallSignal } {
  const live = new Set<AbortController>();
  shutdown?.addEventListener("abort", () => {
    for (const controller of live) controller.abort(shutdown.reason);
    live.clear();
  }, { once: true });
  return {
    open(timeoutMs) {
      const controller = new AbortController();
      let timer: ReturnType<typeof setTimeout> | undefined;
      if (shutdown?.aborted) controller.abort(shutdown.reason);
      else live.add(controller);
      if (timeoutMs !== undefined) {
        const expire = () =>
          controller.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
        if (timeoutMs <= 0) expire();
        else timer = setTimeout(expire, timeoutMs);
      }
      return {
        signal: controller.signal,
        clientGone() {
          if (!controller.signal.aborted) {
            controller.abort(new ConnectError("the client went away", Code.Canceled));
          }
        },
        close() {
          if (timer !== undefined) clearTimeout(timer);
          live.delete(controller);
        },
      };
    },
  };
}
