import assert from "node:assert/strict";
import fc from "fast-check";
import { ConfigError, loadConfig } from "../../lib/config.ts";
import { AppError } from "../../lib/errors.ts";
import { type AddressStore, openAddressStore } from "../../store/addresses/repository.ts";
import type { IdempotencyRecord } from "../../store/addresses/keys.ts";
import { FUZZ_SCALE, FUZZ_SEED } from "../support/fuzz.ts";
import { addressBook, answerOf, bearer, errorCode, sendJson } from "../support/requests.ts";
import { hsToken, SECRET } from "../support/tokens.ts";
import { spawnServer, startTestServer } from "../support/server.ts";
import { addressClient, grpcTransport, rpcFailure } from "../support/rpc_clients.ts";
import { Code } from "@connectrpc/connect";

const input = { name: "Ada", city: "London", postalCode: "W1J 7NT" };
const SCOPES = "addresses:read addresses:write";
const isCode = (code: string) => (e: unknown) => e instanceof AppError && e.code === code;

/** The stored count of an owner (absent: 0). */
async function storedCount(kv: Deno.Kv, owner: string): Promise<number> {
  const entry = await kv.get<Deno.KvU64>(["owner_counts", owner]);
  return entry.value === null ? 0 : Number(entry.value.value);
}

/** What the count must be: the owner's address records plus their orphaned keys. */
async function recount(kv: Deno.Kv, owner: string): Promise<number> {
  let n = 0;
  for await (const e of kv.list<{ owner: string }>({ prefix: ["addresses"] })) {
    if (e.value.owner === owner) n++;
  }
  for await (const e of kv.list<IdempotencyRecord>({ prefix: ["idempotency", owner] })) {
    if (e.value.orphan) n++;
  }
  return n;
}

/** Makes a stored key record expired, as 24 hours passing would. */
async function expire(kv: Deno.Kv, owner: string, key: string): Promise<void> {
  const entry = await kv.get<IdempotencyRecord>(["idempotency", owner, key]);
  assert.ok(entry.value, `key ${key} is stored`);
  await kv.set(entry.key, { ...entry.value, expiresAt: Date.now() - 1 });
}

function outcomes(results: PromiseSettledResult<unknown>[]): { ok: number; quota: number } {
  let ok = 0, quota = 0;
  for (const r of results) {
    if (r.status === "fulfilled") ok++;
    else if (isCode("quota-exceeded")(r.reason)) quota++;
    else throw r.reason;
  }
  return { ok, quota };
}

Deno.test("one batch: each owner's creations count, and one owner past the quota does not fail the others", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv, { maxPerOwner: 5 });
  const owners = ["alice", "bob", "alice", "carol", "bob", "alice"];
  const results = await Promise.allSettled(
    Array.from({ length: 36 }, (_, i) => {
      const owner = i < 30 ? owners[i % owners.length]! : "dave";
      return store.create(owner, { ...input, name: `${owner}${i}` }).then(() => owner);
    }),
  );
  const created = new Map<string, number>();
  for (const r of results) {
    if (r.status === "fulfilled") created.set(r.value, (created.get(r.value) ?? 0) + 1);
    else assert.ok(isCode("quota-exceeded")(r.reason), String(r.reason));
  }
  assert.deepEqual(Object.fromEntries(created), { alice: 5, bob: 5, carol: 5, dave: 5 });
  for (const owner of ["alice", "bob", "carol", "dave"]) {
    assert.equal(await storedCount(kv, owner), 5);
    assert.equal(await recount(kv, owner), 5);
  }
});

Deno.test("two group commits on one KV (two processes) never pass the quota together", async () => {
  using kv = await Deno.openKv(":memory:");
  const one = openAddressStore(kv, { maxPerOwner: 20, maxBatch: 7 });
  const two = openAddressStore(kv, { maxPerOwner: 20, maxBatch: 5 });
  const results = await Promise.allSettled(
    Array.from({ length: 60 }, (_, i) => (i % 2 ? one : two).create("alice", input)),
  );
  assert.deepEqual(outcomes(results), { ok: 20, quota: 40 });
  assert.equal(await storedCount(kv, "alice"), 20);
  assert.equal((await one.list("alice", { limit: 100 })).items.length, 20);
});

Deno.test("v1 and v2 PUTs that create count; replacing does not; a delete gives the unit back", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv, { maxPerOwner: 2 });
  const a = await store.put("alice", 77, input); // v1 on an absent id: created with a new id
  assert.equal(a.created, true);
  const b = await store.putAt("alice", 500, input);
  assert.equal(b.created, true);
  assert.equal(await storedCount(kv, "alice"), 2);
  // Replacing an existing address is no creation.
  assert.equal((await store.putAt("alice", 500, { ...input, name: "Eve" })).created, false);
  assert.equal((await store.put("alice", a.address.id, { ...input, city: "Bath" })).created, false);
  await assert.rejects(store.create("alice", input), isCode("quota-exceeded"));
  await assert.rejects(store.put("alice", 78, input), isCode("quota-exceeded"));
  await assert.rejects(store.putAt("alice", 501, input), isCode("quota-exceeded"));
  assert.equal(await store.get("alice", 501), undefined);
  await store.delete("alice", 500);
  assert.equal(await storedCount(kv, "alice"), 1);
  assert.equal((await store.putAt("alice", 501, input)).created, true);
  assert.equal(await storedCount(kv, "alice"), 2);
  assert.equal(await storedCount(kv, "bob"), 0);
});

Deno.test("an Idempotency-Key of a deleted address holds its unit until it expires and is swept", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv, { maxPerOwner: 2 });
  const first = await store.create("alice", input, "k1");
  assert.equal(await storedCount(kv, "alice"), 1, "an address and its key count once");
  await store.delete("alice", first.address.id);
  assert.equal(await storedCount(kv, "alice"), 1, "the orphaned key holds the unit");
  const orphan = await kv.get<IdempotencyRecord>(["idempotency", "alice", "k1"]);
  assert.equal(orphan.value?.orphan, true);
  // The key still replays the creation, with its first ETag.
  assert.deepEqual(await store.create("alice", input, "k1"), { ...first, replayed: true });
  await store.create("alice", input);
  await assert.rejects(store.create("alice", input), isCode("quota-exceeded"));
  await expire(kv, "alice", "k1");
  // Another process (its own sweeper): the expired orphan is swept and its unit given back.
  const other = openAddressStore(kv, { maxPerOwner: 2 });
  const third = await other.create("alice", input);
  assert.equal(third.replayed, false);
  assert.equal((await kv.get(["idempotency", "alice", "k1"])).value, null);
  assert.equal(await storedCount(kv, "alice"), 2);
  assert.equal(await recount(kv, "alice"), 2);
  // An expired key no longer replays: the same key creates anew. Overwriting an orphaned key
  // takes over its unit: the count stays.
  await other.delete("alice", third.address.id);
  const keyed = await other.create("alice", input, "k2");
  await other.delete("alice", keyed.address.id);
  assert.equal(await storedCount(kv, "alice"), 2);
  await expire(kv, "alice", "k2");
  const again = await other.create("alice", { ...input, name: "New" }, "k2");
  assert.notEqual(again.address.id, keyed.address.id);
  assert.equal(again.replayed, false);
  assert.equal(await storedCount(kv, "alice"), 2);
  assert.equal(await recount(kv, "alice"), 2);
});

Deno.test("erase: every address, key and the count of the owner go, in batches; repeating finds nothing", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  const owner = "\u00e9ve ".repeat(100); // a long owner: bigger keys, smaller batches
  await Promise.all(Array.from({ length: 230 }, (_, i) => store.create(owner, input, `k${i}`)));
  for (let i = 0; i < 20; i++) await store.create(owner, input);
  const bob = await store.create("bob", input, "k1");
  const orphaned = await store.create(owner, input, "gone");
  await store.delete(owner, orphaned.address.id);
  assert.equal(await storedCount(kv, owner), 251);
  assert.equal(await store.erase(owner), 250);
  for (const prefix of [["owner_addresses", owner], ["idempotency", owner]]) {
    for await (const e of kv.list({ prefix })) assert.fail(`left: ${JSON.stringify(e.key)}`);
  }
  for await (const e of kv.list<{ owner: string }>({ prefix: ["addresses"] })) {
    assert.equal(e.value.owner, "bob");
  }
  assert.equal((await kv.get(["owner_counts", owner])).versionstamp, null, "no count key left");
  assert.equal(await store.erase(owner), 0);
  assert.deepEqual((await store.get("bob", bob.address.id))?.address, bob.address);
  assert.equal(await storedCount(kv, "bob"), 1);
  // After the erasure a key the owner used before creates anew.
  assert.equal((await store.create(owner, input, "k1")).replayed, false);
});

/** A step of the count property: what a client (or time) does. */
type Step =
  | { op: "create"; owner: number; key?: string }
  | { op: "delete"; owner: number; pick: number }
  | { op: "putAt"; owner: number; id: number }
  | { op: "expire"; owner: number; key: string }
  | { op: "erase"; owner: number };

const OWNERS = ["alice", "bob"];
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constant("create" as const),
    owner: fc.nat(1),
    key: fc.option(fc.constantFrom("a", "b", "c", "d"), { nil: undefined }),
  }),
  fc.record({ op: fc.constant("delete" as const), owner: fc.nat(1), pick: fc.nat(9) }),
  fc.record({
    op: fc.constant("putAt" as const),
    owner: fc.nat(1),
    id: fc.integer({ min: 1, max: 12 }),
  }),
  fc.record({
    op: fc.constant("expire" as const),
    owner: fc.nat(1),
    key: fc.constantFrom("a", "b", "c", "d"),
  }),
  fc.record({ op: fc.constant("erase" as const), owner: fc.nat(1) }),
);

async function apply(store: AddressStore, kv: Deno.Kv, s: Step): Promise<"ok" | "quota"> {
  const owner = OWNERS[s.owner]!;
  try {
    if (s.op === "create") await store.create(owner, input, s.key);
    else if (s.op === "putAt") {
      await store.putAt(owner, s.id, input).catch((e) => {
        if (!isCode("id-taken")(e)) throw e;
      });
    } else if (s.op === "delete") {
      const items = (await store.list(owner, { limit: 50 })).items;
      if (items.length > 0) await store.delete(owner, items[s.pick % items.length]!.address.id);
    } else if (s.op === "expire") {
      if ((await kv.get(["idempotency", owner, s.key])).value !== null) {
        await expire(kv, owner, s.key);
      }
    } else await store.erase(owner);
    return "ok";
  } catch (error) {
    if (isCode("quota-exceeded")(error)) return "quota";
    throw error;
  }
}

Deno.test("property: the count is always the addresses plus orphaned keys, and never passes the quota (or without one, is summed exactly)", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(4, Infinity),
      fc.array(step, { minLength: 1, maxLength: 40 }),
      async (quota, steps) => {
        using kv = await Deno.openKv(":memory:");
        // Two stores: two processes' sweepers and group commits.
        const stores = [0, 1].map(() => openAddressStore(kv, { maxPerOwner: quota }));
        for (const [i, s] of steps.entries()) {
          const outcome = await apply(stores[i % 2]!, kv, s);
          for (const owner of OWNERS) {
            const count = await storedCount(kv, owner);
            assert.equal(count, await recount(kv, owner), `${owner} after ${JSON.stringify(s)}`);
            assert.ok(count <= quota, `${owner} holds ${count}`);
          }
          if (outcome === "quota") {
            assert.equal(await storedCount(kv, OWNERS[s.owner]!), quota, "refused below the quota");
          }
        }
      },
    ),
    { seed: FUZZ_SEED, numRuns: Math.max(1, Math.round(60 * FUZZ_SCALE)) },
  );
});

/**
 * The KV handle, recording the keys every atomic operation made through it checks, and how many
 * of its commits failed a check.
 */
function recordingChecks(kv: Deno.Kv): { kv: Deno.Kv; checked: string[]; failed: number[] } {
  const checked: string[] = [];
  const failed = [0];
  const recorded = new Proxy(kv, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (name !== "atomic") return typeof value === "function" ? value.bind(target) : value;
      return () => {
        const op = target.atomic();
        const check = op.check.bind(op);
        op.check = (...checks: Deno.AtomicCheck[]) => {
          for (const c of checks) checked.push(JSON.stringify(c.key));
          return check(...checks);
        };
        const commit = op.commit.bind(op);
        op.commit = async () => {
          const result = await commit();
          if (!result.ok) failed[0]!++;
          return result;
        };
        return op;
      };
    },
  });
  return { kv: recorded, checked, failed };
}

Deno.test("without a quota the count is summed, never checked: exact across two processes, and right for a quota set later", async () => {
  using kv = await Deno.openKv(":memory:");
  const recording = recordingChecks(kv);
  const stores = [0, 1].map(() => openAddressStore(recording.kv, { maxPerOwner: Infinity }));
  const created = await Promise.all(
    Array.from(
      { length: 200 },
      (_, i) => stores[i % 2]!.create("", input, i % 10 ? undefined : `k${i}`),
    ),
  );
  await Promise.all(
    created.slice(0, 50).map((c, i) => stores[i % 2]!.delete("", c.address.id)),
  );
  await stores[0]!.putAt("", 1_000, input);
  const count = await storedCount(kv, "");
  assert.equal(count, await recount(kv, ""));
  assert.equal(count, 151 + 5, "150 left, the PUT, and 5 orphaned keys of deleted addresses");
  assert.ok(
    !recording.checked.includes(JSON.stringify(["owner_counts", ""])),
    "no operation checked the count",
  );
  // A quota set later finds the count right.
  const limited = openAddressStore(kv, { maxPerOwner: count + 1 });
  await limited.create("", input);
  await assert.rejects(limited.create("", input), isCode("quota-exceeded"));
  // Deleting everything leaves no count key, orphaned keys aside (swept once expired).
  await stores[1]!.erase("");
  assert.equal((await kv.get(["owner_counts", ""])).versionstamp, null);
});

Deno.test("with a quota a deletion sums the count: one owner's deletions in flight do not conflict, the count stays exact and the quota holds", async () => {
  using kv = await Deno.openKv(":memory:");
  const recording = recordingChecks(kv);
  const stores = [0, 1].map(() => openAddressStore(recording.kv, { maxPerOwner: 200 }));
  const created = await Promise.all(
    Array.from(
      { length: 200 },
      (_, i) => stores[i % 2]!.create("alice", input, i % 10 ? undefined : `k${i}`),
    ),
  );
  recording.checked.length = 0;
  recording.failed[0] = 0;
  // Deletions of one process: they commit through its change log, whose commits of one owner
  // never conflict with each other. Two processes' writes of one owner do, on the owner's change
  // sequence, and retry (docs/events.md): the first commit may find the sequence moved by the
  // other store's creations, once.
  await Promise.all(created.slice(0, 60).map((c) => stores[0]!.delete("alice", c.address.id)));
  assert.ok(recording.failed[0]! <= 1, `${recording.failed[0]} deletions conflicted`);
  assert.ok(
    !recording.checked.includes(JSON.stringify(["owner_counts", "alice"])),
    "no deletion checked the count",
  );
  const count = await storedCount(kv, "alice");
  assert.equal(count, await recount(kv, "alice"));
  assert.equal(count, 140 + 6, "140 left and the 6 orphaned keys of deleted addresses");
  // The units the deletions gave back, and no more, are there to create with.
  const results = await Promise.allSettled(
    Array.from({ length: 80 }, (_, i) => stores[i % 2]!.create("alice", input)),
  );
  assert.deepEqual(outcomes(results), { ok: 200 - count, quota: 80 - (200 - count) });
  assert.equal(await storedCount(kv, "alice"), 200);
});

Deno.test("MAX_ADDRESSES_PER_OWNER over a socket: POST, v1 PUT and v2 PUT past it are 409 quota-exceeded", async () => {
  const server = await startTestServer({ GRPC_PORT: "off", MAX_ADDRESSES_PER_OWNER: "3" });
  const base = server.httpUrl;
  const write = (method: string, path: string, headers: Record<string, string> = {}) =>
    sendJson(`${base}${path}`, method, input, headers);
  try {
    const created = [];
    for (let i = 0; i < 3; i++) {
      const res = await write("POST", "/addresses", { "idempotency-key": `k${i}` });
      assert.equal(res.status, 201);
      created.push(await res.json());
    }
    const refused = await write("POST", "/addresses", { "accept-language": "de" });
    assert.equal(refused.status, 409);
    const body = await refused.json();
    assert.equal(body.errors[0].error, "quota-exceeded");
    assert.match(body.errors[0].message, /Adressen/);
    assert.match(body.errors[0].detail, /at most 3 addresses/);
    assert.equal((await write("PUT", "/addresses/999")).status, 409);
    const v2 = await write("PUT", "/addresses/999", {
      "content-type": "application/vnd.books.v2+json",
    });
    assert.equal(v2.status, 409);
    assert.equal((await v2.json()).errors[0].error, "quota-exceeded");
    // A replay creates nothing: it is answered at the quota too.
    const replay = await write("POST", "/addresses", { "idempotency-key": "k0" });
    assert.equal(replay.status, 201);
    assert.deepEqual(await replay.json(), created[0]);
    // Replacing is not creating.
    assert.equal((await write("PUT", `/addresses/${created[1].id}`)).status, 200);
    // A keyed address deleted: its key still replays for 24 hours and holds the unit.
    assert.equal((await addressBook(base).delete(created[2].id)).status, 204);
    assert.equal((await write("POST", "/addresses")).status, 409);
    const page = await (await fetch(`${base}/addresses`)).json();
    assert.deepEqual(page.addresses.map((a: { id: number }) => a.id), [
      created[0].id,
      created[1].id,
    ]);
  } finally {
    await server.close();
  }
});

Deno.test("two processes on one KV: exactly MAX_ADDRESSES_PER_OWNER creations succeed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-quota-" });
  const env = { KV_PATH: `${dir}/kv.sqlite3`, GRPC_PORT: "off", MAX_ADDRESSES_PER_OWNER: "40" };
  const [a, b] = await Promise.all([spawnServer(env), spawnServer(env)]);
  const post = async (base: string) => await answerOf(await addressBook(base).create(input));
  try {
    const storm = await Promise.all(
      Array.from({ length: 120 }, (_, i) => post(i % 2 ? a.httpUrl : b.httpUrl)),
    );
    for (const r of storm) {
      assert.ok([201, 409, 503].includes(r.status), JSON.stringify(r));
      if (r.status === 409) assert.equal(r.body.errors[0].error, "quota-exceeded");
    }
    let created = storm.filter((r) => r.status === 201).length;
    assert.ok(created <= 40, `${created} created`);
    // A creation refused as busy (503) left room: fill it one by one until the quota answers.
    for (;;) {
      const r = await post(a.httpUrl);
      if (r.status === 409) break;
      assert.equal(r.status, 201);
      created++;
    }
    assert.equal(created, 40);
    assert.equal((await addressBook(b.httpUrl).listAll()).length, 40);
  } finally {
    await a.stop();
    await b.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("MIGRATE_ON_START and MAX_ADDRESSES_PER_OWNER are validated with one line naming them", () => {
  for (
    const [name, value] of [
      ["MIGRATE_ON_START", "yes"],
      ["MAX_ADDRESSES_PER_OWNER", "0"],
      ["MAX_ADDRESSES_PER_OWNER", "ten"],
      ["MAX_ADDRESSES_PER_OWNER", "-5"],
    ]
  ) {
    assert.throws(
      () => loadConfig({ [name!]: value }),
      (e) => e instanceof ConfigError && e.message.startsWith(`invalid ${name}=`),
    );
  }
  const config = loadConfig({ MIGRATE_ON_START: "true", MAX_ADDRESSES_PER_OWNER: "25" });
  assert.equal(config.migrateOnStart, true);
  assert.equal(config.maxAddressesPerOwner, 25);
  const defaults = loadConfig({});
  assert.equal(defaults.migrateOnStart, false);
});

Deno.test("MAX_ADDRESSES_PER_OWNER: unset, no quota with auth off and 10,000 with auth on; set, that value in both modes", () => {
  const authOn = { AUTH_JWT_SECRET: SECRET };
  assert.equal(loadConfig({}).maxAddressesPerOwner, Infinity);
  assert.equal(loadConfig(authOn).maxAddressesPerOwner, 10_000);
  assert.equal(loadConfig({ MAX_ADDRESSES_PER_OWNER: "25" }).maxAddressesPerOwner, 25);
  assert.equal(loadConfig({ ...authOn, MAX_ADDRESSES_PER_OWNER: "25" }).maxAddressesPerOwner, 25);
});

/** Sets an owner's stored count, as if they had created `n` addresses (a fast way to the quota). */
async function setStoredCount(kvPath: string, owner: string, n: number): Promise<void> {
  using kv = await Deno.openKv(kvPath);
  await kv.set(["owner_counts", owner], new Deno.KvU64(BigInt(n)));
}

Deno.test("defaults over a socket: with auth off an owner past 10,000 still creates; with auth on the 10,001st is 409", async () => {
  const open = await startTestServer({ GRPC_PORT: "off" });
  try {
    // The anonymous owner's count as after 10,000 creations (the old default quota).
    await setStoredCount(open.kvPath, "", 10_000);
    for (let i = 0; i < 3; i++) {
      assert.equal((await addressBook(open.httpUrl).create(input)).status, 201);
    }
    using kv = await Deno.openKv(open.kvPath);
    assert.equal(await storedCount(kv, ""), 10_003, "the count stays exact without a quota");
  } finally {
    await open.close();
  }
  const authed = await startTestServer({ GRPC_PORT: "off", AUTH_JWT_SECRET: SECRET });
  try {
    const alice = addressBook(
      authed.httpUrl,
      bearer(await hsToken({ sub: "alice", scope: SCOPES })),
    );
    const bob = addressBook(authed.httpUrl, bearer(await hsToken({ sub: "bob", scope: SCOPES })));
    await setStoredCount(authed.kvPath, "alice", 9_999);
    assert.equal((await alice.create(input)).status, 201, "the 10,000th");
    const refused = await alice.create(input);
    assert.equal(refused.status, 409, "the 10,001st");
    assert.equal(await errorCode(refused), "quota-exceeded");
    assert.equal((await bob.create(input)).status, 201, "another owner has a quota of their own");
  } finally {
    await authed.close();
  }
});

Deno.test("the gRPC listener's process applies the HTTP process's quota: none with auth off, a set one alike", async () => {
  // The child is handed its settings as JSON, which has no Infinity: "no quota" must not arrive
  // as null and become the default.
  const open = await startTestServer({});
  try {
    await setStoredCount(open.kvPath, "", 10_000);
    const grpc = addressClient(grpcTransport(open.grpcUrl!));
    const created = await grpc.createAddress({ address: input });
    assert.ok(created.id > 0n);
    using kv = await Deno.openKv(open.kvPath);
    assert.equal(await storedCount(kv, ""), 10_001);
  } finally {
    await open.close();
  }
  const capped = await startTestServer({ MAX_ADDRESSES_PER_OWNER: "1" });
  try {
    const grpc = addressClient(grpcTransport(capped.grpcUrl!));
    await grpc.createAddress({ address: input });
    const refused = await rpcFailure(grpc.createAddress({ address: input }));
    assert.equal(refused.code, Code.ResourceExhausted);
    assert.equal((await addressBook(capped.httpUrl).create(input)).status, 409);
  } finally {
    await capped.close();
  }
});
