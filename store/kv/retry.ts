import { AppError } from "../../lib/errors.ts";

/** How often and how long a transient KV failure is retried before giving up with 503. */
export interface RetryPolicy {
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

/** Defaults sized so a request gives up within about two seconds. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 12, baseDelayMs: 5, maxDelayMs: 400 };

// SQLite reports lock contention between processes sharing one file as "database is locked";
// remote KV (KV Connect) surfaces network hiccups. Both go away on their own.
const TRANSIENT =
  /database is (locked|busy)|SQLITE_BUSY|connection (reset|refused|closed)|timed? ?out/i;

/** True when a KV error is worth retrying. */
export function isTransientKvError(error: unknown): boolean {
  return error instanceof Error && !(error instanceof AppError) && TRANSIENT.test(error.message);
}

/** Full-jitter exponential backoff delay for the given attempt (0-based). */
export function backoffDelay(attempt: number, policy: RetryPolicy): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.random() * cap;
}

/** Sleeps for `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Runs a KV operation, retrying transient failures with jittered backoff. When they persist the
 * caller gets a `service-unavailable` AppError (503 with Retry-After), never a raw KV error.
 *
 * Every KV call of the store passes here: the first attempt is the operation's own promise with
 * one rejection handler, and only a failure enters the retry loop (an async function per call
 * was measurable on a read by id).
 */
export function withKvRetry<T>(
  operation: () => Promise<T>,
  policy: RetryPolicy = DEFAULT_RETRY,
): Promise<T> {
  let first: Promise<T>;
  try {
    first = operation();
  } catch (error) {
    first = Promise.reject(error);
  }
  return first.catch((error) => retry(error, operation, policy));
}

/** What follows a failed first attempt: the retries of a transient failure, else its error. */
async function retry<T>(error: unknown, operation: () => Promise<T>, policy: RetryPolicy) {
  for (let attempt = 0;; attempt++) {
    if (!isTransientKvError(error)) throw error;
    if (attempt + 1 >= policy.attempts) {
      throw new AppError("service-unavailable", "Storage stayed busy past the retry budget.", {
        retryAfter: 1,
        cause: error,
      });
    }
    await sleep(backoffDelay(attempt, policy));
    try {
      return await operation();
    } catch (next) {
      error = next;
    }
  }
}
