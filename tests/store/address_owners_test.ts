import assert from "node:assert/strict";
import { AppError } from "../../lib/errors.ts";
import { openAddressStore } from "../../store/addresses/repository.ts";
import { COUNTER, MAX_ID, MAX_PUT_AHEAD } from "../../store/addresses/keys.ts";

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

Deno.test("v2 PUT creates above the id counter and moves it; at or below it, 409 unless it is the caller's own", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  const counter = async () => Number((await kv.get<Deno.KvU64>(COUNTER)).value?.value ?? 0n);
  const at3 = await store.putAt("alice", 3, input);
  assert.equal(at3.created, true);
  assert.deepEqual(at3.address, { id: 3, ...input });
  assert.equal(await counter(), 3, "the counter moved to the id");
  assert.equal((await store.putAt("bob", 4, input)).created, true);
  // Repeating is idempotent: the caller's own address is replaced whole.
  const again = await store.putAt("alice", 3, { ...input, name: "Grace" });
  assert.equal(again.created, false);
  assert.deepEqual(again.address, { id: 3, ...input, name: "Grace" });
  // At or below the counter: never used (1), another owner's (4), deleted (3, even for its
  // owner): one answer, so it tells nothing of other owners, and no id is used twice.
  await store.delete("alice", 3);
  for (const [owner, id] of [["carol", 1], ["alice", 4], ["alice", 3], ["bob", 3]] as const) {
    await assert.rejects(store.putAt(owner, id, input), isCode("id-taken"), `${owner} at ${id}`);
  }
  // POST goes on above the counter (one process, one creation at a time: no gap).
  const ids = [];
  for (let i = 0; i < 4; i++) ids.push((await store.create("carol", input)).address.id);
  assert.deepEqual(ids, [5, 6, 7, 8]);
  // Far above the counter is refused too: one PUT must not use up the ids POST hands out.
  const last = await counter();
  await assert.rejects(store.putAt("alice", last + MAX_PUT_AHEAD + 1, input), isCode("id-taken"));
  await assert.rejects(store.putAt("alice", MAX_ID, input), isCode("id-taken"));
  const far = await store.putAt("alice", last + MAX_PUT_AHEAD, input);
  assert.equal(far.created, true);
  assert.equal(await counter(), last + MAX_PUT_AHEAD);
  // POST may still hand out ids of a block it reserved before: below the PUT's, never it.
  assert.notEqual((await store.create("alice", input)).address.id, far.address.id);
  // If-Match on an id the caller does not hold fails, wherever the id is.
  for (const id of [1, 4, far.address.id + 5]) {
    await assert.rejects(
      store.putAt("carol", id, input, () => true),
      isCode("precondition-failed"),
    );
  }
});

/** The KV handle, counting the reads of the id counter made through it. */
function countingCounterReads(kv: Deno.Kv): { kv: Deno.Kv; reads: () => number } {
  let reads = 0;
  const counted = new Proxy(kv, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (name !== "get") return typeof value === "function" ? value.bind(target) : value;
      return (key: Deno.KvKey, ...rest: unknown[]) => {
        if (key.join("/") === COUNTER.join("/")) reads++;
        return value.apply(target, [key, ...rest]);
      };
    },
  });
  return { kv: counted, reads: () => reads };
}

Deno.test("POST reserves ids in blocks that grow with demand: few counter reads, no gap in one process", async () => {
  using kv = await Deno.openKv(":memory:");
  const counting = countingCounterReads(kv);
  const store = openAddressStore(counting.kv);
  const ids = [];
  for (let i = 0; i < 300; i++) ids.push((await store.create("bob", input)).address.id);
  assert.deepEqual(ids, Array.from({ length: 300 }, (_, i) => i + 1));
  // Blocks of 1, 2, 4, … 256: nine reservations.
  assert.ok(counting.reads() <= 10, `${counting.reads()} reservations for 300 creations`);
  const burst = await Promise.all(Array.from({ length: 500 }, () => store.create("bob", input)));
  assert.equal(new Set(burst.map((c) => c.address.id)).size, 500);
  assert.ok(counting.reads() <= 14, `${counting.reads()} reservations after a burst`);
});

Deno.test("an id of a reserved block that an address holds meanwhile (an import) is dropped, never overwritten", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv, { maxPerOwner: Infinity });
  // Grow this process's blocks, so ids past the last one used are reserved and unused.
  for (let i = 0; i < 20; i++) await store.create("bob", input);
  const reserved = Number((await kv.get<Deno.KvU64>(COUNTER)).value!.value);
  assert.ok(reserved > 21, `the process holds unused ids up to ${reserved}`);
  // As an import would write them: restored addresses at ids of that block.
  for (const id of [21, 23]) {
    const address = { id, ...input, name: "Restored" };
    await kv.set(["addresses", id], { v: 2, owner: "carol", address });
    await kv.set(["owner_addresses", "carol", id], address);
  }
  const created = await Promise.all(Array.from({ length: 3 }, () => store.create("bob", input)));
  assert.deepEqual(created.map((c) => c.address.id).toSorted((a, b) => a - b), [22, 24, 25]);
  for (const id of [21, 23]) assert.equal((await store.get("carol", id))?.address.name, "Restored");
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
