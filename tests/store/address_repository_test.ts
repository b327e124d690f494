/**
 * The address store (store/addresses/repository.ts) on an in-memory KV: create, read, replace,
 * delete and list by the interface's rules, preconditions, cursors, and each owner's addresses
 * kept apart.
 */
import assert from "node:assert/strict";
import { AppError } from "../../lib/errors.ts";
import { decodeCursor, encodeCursor } from "../../store/addresses/keys.ts";
import { openAddressStore } from "../../store/addresses/repository.ts";

const input = { name: "Ada", city: "London", postalCode: "W1J 7NT" };
const isCode = (code: string) => (e: unknown) => e instanceof AppError && e.code === code;
const OWNER = "alice";

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

Deno.test("two owners: each sees, changes and lists only their own addresses", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  const a = await store.create("alice", input);
  const b = await store.create("bob", { ...input, name: "Bob" });
  assert.deepEqual([a.address.id, b.address.id], [1, 2]);

  assert.equal(await store.get("bob", 1), undefined);
  assert.deepEqual((await store.get("alice", 1))?.address, { id: 1, ...input });
  await assert.rejects(store.delete("bob", 1), isCode("address-not-found"));
  await assert.rejects(store.delete("bob", 1, () => true), isCode("address-not-found"));
  await assert.rejects(
    store.patch("bob", 1, (c) => ({ ...c, city: "X" })),
    isCode("address-not-found"),
  );

  // v1 PUT on another owner's id: a new address with a generated id; alice's is untouched.
  const put = await store.put("bob", 1, { name: "Bob", city: "Paris", postalCode: "75001" });
  assert.equal(put.created, true);
  assert.equal(put.address.id, 3);
  assert.deepEqual((await store.get("alice", 1))?.address, { id: 1, ...input });
  // With If-Match, the other owner's address is absent: the condition fails.
  await assert.rejects(store.put("bob", 1, input, () => true), isCode("precondition-failed"));

  // v2 PUT on another owner's id: 409 id-taken; with If-Match 412.
  await assert.rejects(store.putAt("bob", 1, input), isCode("id-taken"));
  await assert.rejects(store.putAt("bob", 1, input, () => true), isCode("precondition-failed"));

  const ids = async (owner: string) =>
    (await store.list(owner, { limit: 50 })).items.map((s) => s.address.id);
  assert.deepEqual(await ids("alice"), [1]);
  assert.deepEqual(await ids("bob"), [2, 3]);
  assert.deepEqual(await ids("carol"), []);

  // Deleting removes the owner-index entry with the record.
  await store.delete("bob", 2);
  assert.deepEqual(await ids("bob"), [3]);
  assert.equal((await kv.get(["owner_addresses", "bob", 2])).value, null);
  // Ids stay global and are not reused.
  assert.equal((await store.create("carol", input)).address.id, 4);
});

Deno.test("index entry and record share the versionstamp (the ETag) after each write", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  const a = await store.create("alice", input);
  const check = async (versionstamp: string) => {
    const [record, index] = await kv.getMany([["addresses", 1], ["owner_addresses", "alice", 1]]);
    assert.equal(record.versionstamp, versionstamp);
    assert.equal(index.versionstamp, versionstamp);
    assert.deepEqual(index.value, (record.value as { address: unknown }).address);
  };
  await check(a.versionstamp);
  await check((await store.put("alice", 1, { ...input, city: "Bath" })).versionstamp);
  await check((await store.putAt("alice", 1, { ...input, name: "Eve" })).versionstamp);
  await check((await store.patch("alice", 1, (c) => ({ ...c, postalCode: "BA1" }))).versionstamp);
  const listed = await store.list("alice", { limit: 1 });
  assert.deepEqual(listed.items[0]?.address, {
    id: 1,
    name: "Eve",
    city: "London",
    postalCode: "BA1",
  });
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

Deno.test("listing pages one owner's addresses while others interleave", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  for (let i = 0; i < 9; i++) await store.create(i % 3 === 0 ? "alice" : "bob", input);
  const seen: number[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.list("alice", { limit: 2, cursor });
    seen.push(...page.items.map((s) => s.address.id));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  assert.deepEqual(seen, [1, 4, 7]);
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

Deno.test("an owner too long for a KV key is refused with 403, never a KV TypeError", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  const longest = "\u20ac".repeat(512); // 512 UTF-16 units, 1536 UTF-8 bytes: the worst case
  const created = await store.create(longest, input, "k".repeat(255));
  assert.equal((await store.list(longest, { limit: 5 })).items.length, 1);
  assert.equal((await store.get(longest, created.address.id))?.address.id, created.address.id);
  const tooLong = "x".repeat(513);
  for (
    const call of [
      () => store.create(tooLong, input, "k"),
      () => store.get(tooLong, 1),
      () => store.list(tooLong, { limit: 5 }),
      () => store.put(tooLong, 1, input),
      () => store.putAt(tooLong, 1, input),
      () => store.patch(tooLong, 1, (c) => c),
      () => store.delete(tooLong, 1),
      () => store.erase(tooLong),
      () => store.exportAll(tooLong).next(),
    ]
  ) await assert.rejects(call(), isCode("forbidden"));
});
