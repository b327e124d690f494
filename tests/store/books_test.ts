/** The book catalogue in KV (store/books.ts): seeded once, listed by id, served as JSON. */
import assert from "node:assert/strict";
import type { Book } from "../../lib/schemas.ts";
import { openBookStore, seedCatalogue } from "../../store/books.ts";

const SEED: Book[] = [
  { id: 2, title: "B", year: 2000, author: { firstName: "F", lastName: "L" } },
  { id: 1, title: "A", year: 1999, author: { firstName: "G", lastName: "M" } },
  { id: 10, title: "C", year: 2001, author: { firstName: "H", lastName: "N" } },
];

Deno.test("book store seeds once, lists by ascending id, and serves cached JSON", async () => {
  using kv = await Deno.openKv(":memory:");
  const books = await openBookStore(kv, SEED);
  assert.deepEqual(books.list().map((b) => b.id), [1, 2, 10]);
  assert.deepEqual(books.get(10), SEED[2]);
  assert.equal(books.get(3), undefined);
  assert.deepEqual(JSON.parse(books.listJson()), books.list());
  assert.deepEqual(JSON.parse(books.getJson(2)!), SEED[0]);
  // A second seed (another instance, another file) does not change the seeded catalogue.
  assert.equal(await seedCatalogue(kv, [{ ...SEED[0]!, id: 99 }]), false);
  const again = await openBookStore(kv, []);
  assert.deepEqual(again.list().map((b) => b.id), [1, 2, 10]);
});

Deno.test("two instances seeding at once agree on one catalogue", async () => {
  using kv = await Deno.openKv(":memory:");
  const results = await Promise.all([seedCatalogue(kv, SEED), seedCatalogue(kv, SEED)]);
  assert.equal(results.filter(Boolean).length, 1);
  const books = await openBookStore(kv, []);
  assert.equal(books.list().length, 3);
});

Deno.test("seeding more than one atomic operation's worth of books", async () => {
  using kv = await Deno.openKv(":memory:");
  const many = Array.from({ length: 1234 }, (_, i) => ({ ...SEED[0]!, id: i + 1 }));
  const books = await openBookStore(kv, many);
  assert.equal(books.list().length, 1234);
});
