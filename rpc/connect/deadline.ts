import { Code, ConnectError } from "@connectrpc/connect";
import { AppError } from "../../lib/errors.ts";

/** What of a call's context tells its deadline (Connect's HandlerContext and interceptor request). */
interface Deadlined {
  signal: AbortSignal;
  timeoutMs(): number | undefined;
}

function passed(call: Deadlined): boolean {
  const left = call.timeoutMs();
  if (left !== undefined && left <= 0) return true;
  const reason: unknown = call.signal.aborted ? call.signal.reason : undefined;
  return reason instanceof ConnectError && reason.code === Code.DeadlineExceeded;
}

function deadlineExceeded(when: string): AppError {
  return new AppError(
    "deadline-exceeded",
    `The call's deadline passed ${when}; nothing was written.`,
  );
}

/**
 * The service implementation `impl` with each method refusing a call whose deadline has passed
 * before any of its work starts: its client has stopped waiting, so the answer would be
 * DEADLINE_EXCEEDED whatever the call did, and a write would be done for no one. The refusal is
 * thrown inside the interceptor, which renders it like any application error.
 */
export function refusingExpired<T extends object>(impl: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(impl)) {
    wrapped[name] = typeof method !== "function" ? method : (request: unknown, call: Deadlined) => {
      if (passed(call)) throw deadlineExceeded("before the call started");
      return method.call(impl, request, call);
    };
  }
  return wrapped as T;
}

/**
 * The store's "still wanted?" check of a write (store/addresses/repository.ts `WriteOptions`),
 * asked right before its commit: it throws DEADLINE_EXCEEDED once the call's deadline has passed.
 * Undefined for a call without a deadline. It does not follow the call's signal otherwise: a
 * call in flight when the server shuts down still completes (graceful shutdown).
 */
export function stillWanted(call: Deadlined): (() => void) | undefined {
  if (call.timeoutMs() === undefined) return undefined;
  return () => {
    if (passed(call)) throw deadlineExceeded("before the write committed");
  };
}
