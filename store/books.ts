import type { Book } from "../lib/schemas.ts";
import { fittingRuns, keySize, valueSize } from "./kv/atomic_budget.ts";
import { withKvRetry } from "./kv/retry.ts";

/** Read access to the book catalogue. */
export interface BookStore {
  /** Every book, ascending id. The array is shared and frozen: do not mutate. */
  list(): readonly Book[];
  /** One book, or undefined. */
  get(id: number): Book | undefined;
  /**
   * The JSON text of `list()`, made once, for the REST hot path. A string rather than bytes: a
   * Response takes a string body as it is, while it copies the bytes of a byte body.
   */
  listJson(): string;
  /** The JSON text of one book, made once, or undefined. */
  getJson(id: number): string | undefined;
  /** True once the catalogue has been seeded and loaded. */
  isReady(): boolean;
}

const BOOK_PREFIX = ["books"] as const;
const SEEDED_MARKER = ["catalogue", "seeded"] as const;

/**
 * Seeds the catalogue once (idempotent: writing the same book twice is harmless, and the marker
 * is set with a check so concurrent instances agree), then loads it into memory. The catalogue
 * has no write API, so one load at start-up serves every request without touching KV.
 */
export async function openBookStore(kv: Deno.Kv, seed: readonly Book[]): Promise<BookStore> {
  await seedCatalogue(kv, seed);
  const books: Book[] = [];
  for await (const entry of kv.list<Book>({ prefix: BOOK_PREFIX })) books.push(entry.value);
  return createBookStore(books);
}

/** Builds a BookStore over books already in memory (ascending id). */
export function createBookStore(books: readonly Book[]): BookStore {
  const frozen = Object.freeze(books.map((b) => Object.freeze({ ...b })));
  const byId = new Map(frozen.map((b) => [b.id, b]));
  const json = JSON.stringify(frozen);
  const jsonById = new Map(frozen.map((b) => [b.id, JSON.stringify(b)]));
  return {
    list: () => frozen,
    get: (id) => byId.get(id),
    listJson: () => json,
    getJson: (id) => jsonById.get(id),
    isReady: () => true,
  };
}

/** Writes the seed books unless the catalogue was seeded before. */
export async function seedCatalogue(kv: Deno.Kv, seed: readonly Book[]): Promise<boolean> {
  const marker = await withKvRetry(() => kv.get(SEEDED_MARKER));
  if (marker.value !== null) return false;
  const keyOf = (book: Book): Deno.KvKey => [...BOOK_PREFIX, book.id];
  const cost = (book: Book) => ({
    mutations: 1,
    keyBytes: keySize(keyOf(book)),
    valueBytes: valueSize(book),
  });
  for (const books of fittingRuns(seed, cost)) {
    const op = kv.atomic();
    for (const book of books) op.set(keyOf(book), book);
    await withKvRetry(() => op.commit());
  }
  const done = await withKvRetry(() =>
    kv.atomic().check({ key: SEEDED_MARKER, versionstamp: null })
      .set(SEEDED_MARKER, { count: seed.length, at: new Date().toISOString() })
      .commit()
  );
  return done.ok;
}
