/**
 * How the address store hands out ids (store/addresses/id_blocks.ts, keys.ts): blocks reserved
 * from one counter, the version 2 PUT rule for ids at, below and far above it, and no id handed
 * out twice by stores sharing a KV. tests/store/id_blocks_test.ts checks the last across processes.
 */
import assert from "node:assert/strict";
import { writePrecondition } from "../../lib/http/etag.ts";
import { AppError } from "../../lib/errors.ts";
import { openAddressStore } from "../../store/addresses/repository.ts";
import { COUNTER, MAX_ID, MAX_PUT_AHEAD } from "../../store/addresses/keys.ts";

const input = { name: "Ada", city: "London", postalCode: "W1J 7NT" };
const isCode = (code: string) => (e: unknown) => e instanceof AppError && e.code === code;
const OWNER = "alice";

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
      store.putAt("carol", id, input, writePrecondition("*")),
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
