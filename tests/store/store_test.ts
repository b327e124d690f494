import assert from "node:assert/strict";
import { AppError } from "../../lib/errors.ts";
import type { Book } from "../../lib/schemas.ts";
import { decodeCursor, encodeCursor } from "../../store/addresses/keys.ts";
import { openAddressStore } from "../../store/addresses/repository.ts";
import { openBookStore, seedCatalogue } from "../../store/books.ts";
import { isTransientKvError, withKvRetry } from "../../store/kv/retry.ts";

const SEED: Book[] = [
  { id: 2, title: "B", year: 2000, author: { firstName: "F", lastName: "L" } },
  { id: 1, title: "A", year: 1999, author: { firstName: "G", lastName: "M" } },
  { id: 10, title: "C", year: 2001, author: { firstName: "H", lastName: "N" } },
];
const input = { name: "Ada", city: "London", postalCode: "W1J 7NT" };
const OWNER = "alice";

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

Deno.test("address create/get/put/delete keep the interface's rules", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  const a = await store.create(OWNER, input);
  const b = await store.create(OWNER, { ...input, name: "Bob" });
  assert.deepEqual([a.address.id, b.address.id], [1, 2]);
  assert.deepEqual((await store.get(OWNER, 1))?.address, { id: 1, ...input });

  // Existing: city and postalCode replaced, name kept.
  const put = await store.put(OWNER, 1, { name: "Other", city: "Paris", postalCode: "75001" });
  assert.equal(put.created, false);
  assert.deepEqual(put.address, { id: 1, name: "Ada", city: "Paris", postalCode: "75001" });
  assert.notEqual(put.versionstamp, a.versionstamp);

  // Absent: stored as new with a generated id, not the path id.
  const created = await store.put(OWNER, 77, { name: "New", city: "Rome", postalCode: "00100" });
  assert.equal(created.created, true);
  assert.equal(created.address.id, 3);
  assert.equal(await store.get(OWNER, 77), undefined);

  await store.delete(OWNER, 2);
  assert.equal(await store.get(OWNER, 2), undefined);
  await assert.rejects(
    store.delete(OWNER, 2),
    (e) => e instanceof AppError && e.code === "address-not-found",
  );
  // Ids are never reused after a delete.
  assert.equal((await store.create(OWNER, input)).address.id, 4);
});

Deno.test("a precondition: a stale versionstamp is 412 and changes nothing", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  const a = await store.create(OWNER, input);
  const isVersion = (versionstamp: string) => versionstamp === a.versionstamp;
  const any = () => true;
  const updated = await store.put(OWNER, 1, { ...input, city: "Bath" }, isVersion);
  assert.equal(updated.address.city, "Bath");
  const isPrecondition = (e: unknown) => e instanceof AppError && e.code === "precondition-failed";
  await assert.rejects(
    store.put(OWNER, 1, { ...input, city: "York" }, isVersion),
    isPrecondition,
  );
  await assert.rejects(store.delete(OWNER, 1, isVersion), isPrecondition);
  await assert.rejects(store.put(OWNER, 50, input, any), isPrecondition);
  assert.equal((await store.get(OWNER, 1))?.address.city, "Bath");
  await store.delete(OWNER, 1, any);
  assert.equal(await store.get(OWNER, 1), undefined);
});

Deno.test("concurrent creations from two stores on one KV get unique ids", async () => {
  using kv = await Deno.openKv(":memory:");
  const one = openAddressStore(kv, { maxBatch: 7 });
  const two = openAddressStore(kv, { maxBatch: 5 });
  const created = await Promise.all(
    Array.from(
      { length: 300 },
      (_, i) => (i % 2 ? one : two).create(OWNER, { ...input, name: `n${i}` }),
    ),
  );
  const ids = created.map((c) => c.address.id);
  assert.equal(new Set(ids).size, 300);
  // Each store hands out ids of its own blocks: every id at or below the counter.
  const counter = Number((await kv.get<Deno.KvU64>(["counters", "addresses"])).value!.value);
  assert.ok(ids.every((id) => id >= 1 && id <= counter));
  for (const c of created) {
    assert.deepEqual((await one.get(OWNER, c.address.id))?.address, c.address);
  }
});

Deno.test("list pages by ascending id with an opaque cursor", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  for (let i = 0; i < 7; i++) await store.create(OWNER, { ...input, name: `n${i}` });
  await store.delete(OWNER, 3);
  const seen: number[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await store.list(OWNER, { limit: 2, cursor });
    seen.push(...page.items.map((s) => s.address.id));
    cursor = page.nextCursor ?? undefined;
    pages++;
  } while (cursor);
  assert.deepEqual(seen, [1, 2, 4, 5, 6, 7]);
  assert.equal(pages, 3);
  const all = await store.list(OWNER, { limit: 50 });
  assert.equal(all.nextCursor, null);
});

Deno.test("cursors round-trip and foreign cursors are invalid-parameter", () => {
  assert.equal(decodeCursor(encodeCursor(12345)), 12345);
  for (const bad of ["", "abc", "!!!!", btoa("a1:0"), btoa("a1:-1"), btoa("x:1"), "A".repeat(41)]) {
    assert.throws(
      () => decodeCursor(bad),
      (e) => e instanceof AppError && e.code === "invalid-parameter",
      bad,
    );
  }
});

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
