import { dirname } from "node:path";
import { ConfigError } from "../../lib/config.ts";
import { type Book, CatalogueSchema } from "../../lib/schemas.ts";
import { type RetryPolicy, withKvRetry } from "./retry.ts";

/** The shipped catalogue, seeded when `BOOKS_FILE` is not set. */
export const DEFAULT_BOOKS = new URL("../books.json", import.meta.url);

/** Reads and validates the seed catalogue. */
export async function readCatalogue(path: string | URL): Promise<Book[]> {
  let raw: unknown;
  try {
    raw = JSON.parse(await Deno.readTextFile(path));
  } catch (error) {
    throw new ConfigError(`invalid BOOKS_FILE=${String(path)}: ${(error as Error).message}`);
  }
  const parsed = CatalogueSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(
      `invalid BOOKS_FILE=${String(path)}: ${issue.path.join(".")} ${issue.message}`,
    );
  }
  return parsed.data.toSorted((a, b) => a.id - b.id);
}

/**
 * Opening waits as long as the file stays locked: a backup or a `sqlite3` shell holding it for a
 * while should delay start-up (store/kv/locks.ts logs by whom), not end it.
 */
const OPEN_RETRY: RetryPolicy = { attempts: Infinity, baseDelayMs: 5, maxDelayMs: 1000 };

/** True for a KV path that is a file of this machine (not `:memory:`, a URL, or the platform's). */
export function isKvFile(path: string | undefined): path is string {
  return path !== undefined && path !== ":memory:" && !/^https?:\/\//.test(path);
}

/**
 * Opens KV at a file path (creating its directory), `:memory:`, or a KV Connect URL; with no
 * path, the platform's KV (Deno Deploy; locally, the origin storage of the main module).
 */
export async function openKv(
  path: string | undefined,
  retry: RetryPolicy = OPEN_RETRY,
): Promise<Deno.Kv> {
  if (isKvFile(path)) {
    await Deno.mkdir(dirname(path), { recursive: true });
  }
  // A second process opening the same file can briefly see "database is locked"; another that
  // holds an exclusive lock, as long as it holds it.
  return await withKvRetry(() => Deno.openKv(path), retry);
}
