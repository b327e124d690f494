import { AppError } from "../../lib/errors.ts";

/** Seconds a client is asked to wait: a full disk or a pulled file is not fixed in a second. */
const STORAGE_RETRY_AFTER_S = 5;

// SQLite's messages (as Deno KV passes them on) and the operating system's errors beneath them.
// None of these goes away by retrying at once, unlike "database is locked" (retry.ts).
const FAULTS: [RegExp, string][] = [
  [/database or disk is full|SQLITE_FULL|no space left|ENOSPC|os error 28\b/i, "disk full"],
  [/file too large|EFBIG|os error 27\b/i, "file size limit reached"],
  [/readonly database|read-only file system|SQLITE_READONLY|EROFS|os error 30\b/i, "read-only"],
  [/disk I\/O error|SQLITE_IOERR|input\/output error|os error 5\b/i, "I/O error"],
  [/unable to open database file|SQLITE_CANTOPEN/i, "database file cannot be opened"],
  [/database disk image is malformed|SQLITE_CORRUPT|file is not a database/i, "database corrupt"],
  [/too many open files|os error 24\b/i, "too many open files"],
];

/** What a KV error says about the storage beneath it, or undefined when it is no storage fault. */
export function storageFault(error: unknown): string | undefined {
  if (!(error instanceof Error) || error instanceof AppError) return undefined;
  for (const [pattern, reason] of FAULTS) if (pattern.test(error.message)) return reason;
  return undefined;
}

/** The answer to a write the storage cannot take: 503 `storage-unavailable` with Retry-After. */
export function storageUnavailable(detail: string, cause?: unknown): AppError {
  return new AppError("storage-unavailable", detail, {
    retryAfter: STORAGE_RETRY_AFTER_S,
    cause,
  });
}
