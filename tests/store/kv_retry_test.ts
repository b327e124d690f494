/** store/kv/retry.ts: which KV errors are retried, and what a persistent one becomes. */
import assert from "node:assert/strict";
import { AppError } from "../../lib/errors.ts";
import { isTransientKvError, withKvRetry } from "../../store/kv/retry.ts";

Deno.test("transient KV errors are retried; persistent ones become 503", async () => {
  let calls = 0;
  const flaky = () => {
    calls++;
    if (calls < 3) return Promise.reject(new TypeError("database is locked"));
    return Promise.resolve("ok");
  };
  assert.equal(await withKvRetry(flaky), "ok");
  assert.equal(calls, 3);

  const policy = { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 };
  await assert.rejects(
    withKvRetry(() => Promise.reject(new Error("database is locked")), policy),
    (e) => e instanceof AppError && e.status === 503 && e.retryAfter === 1,
  );
  // Anything else is not retried.
  let other = 0;
  await assert.rejects(
    withKvRetry(() => {
      other++;
      return Promise.reject(new RangeError("boom"));
    }, policy),
    RangeError,
  );
  assert.equal(other, 1);
  assert.equal(isTransientKvError(new Error("Database is locked")), true);
  assert.equal(isTransientKvError(new Error("value too large")), false);
});
