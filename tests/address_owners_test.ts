import assert from "node:assert/strict";
import { AppError } from "../lib/errors.ts";
import { openAddressStore } from "../store/addresses/repository.ts";
import { MAX_ID } from "../store/addresses/keys.ts";

const input = { name: "Ada", city: "London", postalCode: "W1J 7NT" };
const isCode = (code: string) => (e: unknown) => e instanceof AppError && e.code === code;

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

Deno.test("v2 PUT creates at the path id; POST skips ids PUT created", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  const at3 = await store.putAt("alice", 3, input);
  assert.equal(at3.created, true);
  assert.deepEqual(at3.address, { id: 3, ...input });
  const at4 = await store.putAt("bob", 4, input);
  assert.equal(at4.created, true);
  // Repeating is idempotent: replaced whole, same state.
  const again = await store.putAt("alice", 3, { ...input, name: "Grace" });
  assert.equal(again.created, false);
  assert.deepEqual(again.address, { id: 3, ...input, name: "Grace" });
  const ids = [];
  for (let i = 0; i < 4; i++) ids.push((await store.create("carol", input)).address.id);
  assert.deepEqual(ids, [1, 2, 5, 6]);

  // The largest id; POST is unaffected by it.
  const top = await store.putAt("alice", MAX_ID, input);
  assert.equal(top.address.id, MAX_ID);
  assert.equal((await store.create("alice", input)).address.id, 7);
  assert.deepEqual((await store.get("alice", MAX_ID))?.address, { id: MAX_ID, ...input });

  // If-Match on an absent id fails; an absent id is created without it.
  await assert.rejects(store.putAt("alice", 100, input, () => true), isCode("precondition-failed"));
});

Deno.test("POST batches skip a run of PUT-created ids longer than the batch", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv, { maxBatch: 4 });
  for (let id = 1; id <= 10; id++) await store.putAt("alice", id, input);
  await store.putAt("alice", 12, input);
  const created = await Promise.all(Array.from({ length: 6 }, () => store.create("bob", input)));
  assert.deepEqual(created.map((c) => c.address.id).toSorted((a, b) => a - b), [
    11,
    13,
    14,
    15,
    16,
    17,
  ]);
});

/** The KV handle, counting the range reads (`list`) made through it. */
function countingLists(kv: Deno.Kv): { kv: Deno.Kv; lists: () => number } {
  let lists = 0;
  const counted = new Proxy(kv, {
    get(target, name) {
      if (name === "list") lists++;
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { kv: counted, lists: () => lists };
}

Deno.test("POST looks for PUT-created ids only when its batch may reach one", async () => {
  using kv = await Deno.openKv(":memory:");
  const counting = countingLists(kv);
  const store = openAddressStore(counting.kv);
  const ids = async (n: number) => {
    const out = [];
    for (let i = 0; i < n; i++) out.push((await store.create("bob", input)).address.id);
    return out;
  };
  // A fresh KV has no NEXT_TAKEN yet: the first batch looks once and records that none is taken.
  assert.deepEqual(await ids(3), [1, 2, 3]);
  assert.equal(counting.lists(), 1);
  assert.deepEqual(await ids(3), [4, 5, 6]);
  assert.equal(counting.lists(), 1, "no range read while no id above the counter is taken");
  // A PUT far above the counter, and one far below it, changes nothing until POST gets there.
  await store.putAt("alice", 9, input);
  await store.putAt("alice", 1_000_000, input);
  assert.deepEqual(await ids(2), [7, 8]);
  assert.equal(counting.lists(), 1);
  assert.deepEqual(await ids(2), [10, 11]);
  assert.equal(counting.lists(), 2, "one range read to step over id 9");
  assert.deepEqual(await ids(2), [12, 13]);
  assert.equal(counting.lists(), 2, "then none: the next taken id is 1,000,000");
  assert.equal((await kv.get(["counters", "addresses_next_taken"])).value?.valueOf(), 1_000_000n);
});

Deno.test("a KV from before NEXT_TAKEN: POST still skips ids PUT created above the counter", async () => {
  using kv = await Deno.openKv(":memory:");
  // The layout of the previous version: records above the counter, no NEXT_TAKEN.
  for (const id of [2, 3, 7]) {
    const address = { id, ...input };
    await kv.set(["addresses", id], { owner: "alice", address });
    await kv.set(["owner_addresses", "alice", id], address);
  }
  await kv.set(["counters", "addresses"], new Deno.KvU64(1n));
  const one = openAddressStore(kv, { maxBatch: 2 });
  const two = openAddressStore(kv, { maxBatch: 3 });
  const created = await Promise.all(
    Array.from({ length: 8 }, (_, i) => (i % 2 ? one : two).create("bob", input)),
  );
  assert.deepEqual(created.map((c) => c.address.id).toSorted((a, b) => a - b), [
    4,
    5,
    6,
    8,
    9,
    10,
    11,
    12,
  ]);
  assert.equal((await kv.get(["counters", "addresses_next_taken"])).value?.valueOf(), 0n);
});

Deno.test("concurrent POSTs and v2 PUTs from two stores on one KV never share an id", async () => {
  using kv = await Deno.openKv(":memory:");
  const one = openAddressStore(kv, { maxBatch: 7 });
  const two = openAddressStore(kv, { maxBatch: 5 });
  const results = await Promise.allSettled(
    Array.from({ length: 200 }, (_, i) => {
      const store = i % 2 ? one : two;
      // PUTs land on ids the POSTs are about to take.
      return i % 5 === 0
        ? store.putAt(`p${i}`, i / 5 + 20, { ...input, name: `put${i}` })
        : store.create(`c${i}`, { ...input, name: `post${i}` });
    }),
  );
  const ok = results.filter((r) => r.status === "fulfilled").map((r) => r.value);
  // A PUT may find its id taken by a POST (409): never both.
  for (const r of results) {
    if (r.status === "rejected") assert.ok(isCode("id-taken")(r.reason), String(r.reason));
  }
  const ids = ok.map((c) => c.address.id);
  assert.equal(new Set(ids).size, ids.length, "no id handed out twice");
  for (const c of ok) {
    const record = (await kv.get<{ address: unknown }>(["addresses", c.address.id])).value;
    assert.deepEqual(record?.address, c.address, "the stored address is the one answered");
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
