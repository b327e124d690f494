/**
 * The address store (store/addresses/repository.ts) on an in-memory KV: create, read, replace,
 * delete and list by the interface's rules, preconditions (If-Match, If-None-Match), ETags,
 * page tokens, and each owner's addresses kept apart.
 */
import assert from "node:assert/strict";
import { AppError } from "../../lib/errors.ts";
import { type Precondition, writePrecondition } from "../../lib/http/etag.ts";
import { openAddressStore } from "../../store/addresses/repository.ts";
import { PAGE_TOKEN_KEY, pageTokens } from "../../store/addresses/page_tokens.ts";

/** A precondition that holds whatever the state (the store still reads and checks it). */
const any: Precondition = () => undefined;
/** `If-Match: *`: holds only on an address the caller has. */
const ifExists = writePrecondition("*")!;

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
  assert.notEqual(put.etag, a.etag);

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

Deno.test("a precondition: a stale ETag is 412 and changes nothing", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  const a = await store.create(OWNER, input);
  const isVersion = writePrecondition(a.etag)!;
  const updated = await store.put(OWNER, 1, { ...input, city: "Bath" }, isVersion);
  assert.equal(updated.address.city, "Bath");
  const isPrecondition = (e: unknown) => e instanceof AppError && e.code === "precondition-failed";
  await assert.rejects(
    store.put(OWNER, 1, { ...input, city: "York" }, isVersion),
    isPrecondition,
  );
  await assert.rejects(store.delete(OWNER, 1, isVersion), isPrecondition);
  await assert.rejects(store.put(OWNER, 50, input, ifExists), isPrecondition);
  assert.equal((await store.get(OWNER, 1))?.address.city, "Bath");
  await store.delete(OWNER, 1, ifExists);
  assert.equal(await store.get(OWNER, 1), undefined);
});

Deno.test("If-None-Match: 412 on the caller's address it matches (or *), create-if-absent on a free id", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  const a = await store.create(OWNER, input);
  const failed = (detail: RegExp) => (e: unknown) =>
    e instanceof AppError && e.code === "precondition-failed" && detail.test(e.message);
  const absentOnly = writePrecondition(undefined, "*")!;
  const notThis = writePrecondition(undefined, `W/${a.etag}`)!;
  await assert.rejects(
    store.putAt(OWNER, 1, { ...input, name: "X" }, absentOnly),
    failed(/If-None-Match/),
  );
  await assert.rejects(
    store.put(OWNER, 1, { ...input, city: "X" }, absentOnly),
    failed(/If-None-Match/),
  );
  await assert.rejects(
    store.patch(OWNER, 1, (c) => ({ ...c, city: "X" }), notThis),
    failed(/If-None-Match/),
  );
  await assert.rejects(store.delete(OWNER, 1, absentOnly), failed(/If-None-Match/));
  assert.deepEqual(
    await store.get(OWNER, 1),
    { address: a.address, etag: a.etag },
    "nothing changed",
  );
  // Another tag goes ahead; so does `*` where the caller has nothing (another owner's id too,
  // for a v1 PUT: it creates elsewhere).
  const other = writePrecondition(undefined, '"other"')!;
  const patched = await store.patch(OWNER, 1, (c) => ({ ...c, city: "Bath" }), other);
  assert.equal(patched.address.city, "Bath");
  const created = await store.putAt(OWNER, 5000, input, absentOnly);
  assert.equal(created.created, true);
  assert.equal(created.address.id, 5000);
  await assert.rejects(store.putAt(OWNER, 5000, input, absentOnly), failed(/If-None-Match/));
  assert.equal((await store.put("bob", 1, input, absentOnly)).created, true);
  // If-Match first (RFC 9110 13.2.2): both fail, If-Match is named.
  const both = writePrecondition('"stale"', "*")!;
  await assert.rejects(store.delete(OWNER, 1, both), failed(/If-Match does not match/));
  // If-Match holds, If-None-Match fails.
  const matchButExists = writePrecondition(patched.etag, "*")!;
  await assert.rejects(store.delete(OWNER, 1, matchButExists), failed(/If-None-Match/));
  await store.delete(OWNER, 1, writePrecondition(patched.etag, '"other"'));
  assert.equal(await store.get(OWNER, 1), undefined);
});

Deno.test("ETags: one per version, unique across a batch of creations, opaque, strong", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  // Created together: one atomic operation (one versionstamp), 24 ETags.
  const owners = Array.from({ length: 24 }, (_, i) => i % 2 ? "alice" : "bob");
  const created = await Promise.all(owners.map((owner) => store.create(owner, input)));
  const ids = new Set(created.map((c) => c.address.id));
  assert.equal(ids.size, 24);
  const stamps = new Set<string>();
  for await (const e of kv.list({ prefix: ["addresses"] })) stamps.add(e.versionstamp);
  assert.ok(stamps.size < 24, `group commits: ${stamps.size} versionstamps`);
  const etags = new Set(created.map((c) => c.etag));
  assert.equal(etags.size, 24);
  for (const etag of etags) {
    assert.match(etag, /^"[A-Za-z0-9_-]{22}"$/);
    for (const stamp of stamps) assert.ok(!etag.includes(stamp), "nothing of a versionstamp");
  }
  // Another address's ETag, even one of the same owner and batch, is not this one's.
  const alices = created.filter((_, i) => owners[i] === "alice");
  const [one, two] = [alices[0]!, alices[1]!];
  const change = (c: typeof input) => ({ ...c, city: "X" });
  await assert.rejects(
    store.patch("alice", two.address.id, change, writePrecondition(one.etag)),
    isCode("precondition-failed"),
  );
  assert.deepEqual(await store.get("alice", two.address.id), {
    address: two.address,
    etag: two.etag,
  });
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
  await assert.rejects(store.delete("bob", 1, any), isCode("address-not-found"));
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
  await assert.rejects(store.put("bob", 1, input, ifExists), isCode("precondition-failed"));

  // v2 PUT on another owner's id: 409 id-taken; with If-Match 412.
  await assert.rejects(store.putAt("bob", 1, input), isCode("id-taken"));
  await assert.rejects(store.putAt("bob", 1, input, ifExists), isCode("precondition-failed"));

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

Deno.test("index entry and record carry the version's ETag (and one versionstamp) after each write", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  const a = await store.create("alice", input);
  const seen = new Set<string>();
  const check = async (stored: { etag: string; address: unknown }) => {
    const [record, index] = await kv.getMany<[{ address: unknown; etag: string }, unknown]>([
      ["addresses", 1],
      ["owner_addresses", "alice", 1],
    ]);
    assert.equal(record.versionstamp, index.versionstamp);
    assert.equal(record.value?.etag, stored.etag);
    assert.deepEqual(index.value, { etag: stored.etag, address: stored.address });
    assert.deepEqual(record.value?.address, stored.address);
    assert.ok(!seen.has(stored.etag), "a new version, a new ETag");
    seen.add(stored.etag);
    assert.deepEqual(await store.get("alice", 1), { address: stored.address, etag: stored.etag });
  };
  await check(a);
  await check(await store.put("alice", 1, { ...input, city: "Bath" }));
  await check(await store.putAt("alice", 1, { ...input, name: "Eve" }));
  await check(await store.patch("alice", 1, (c) => ({ ...c, postalCode: "BA1" })));
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

Deno.test("page tokens: round-trip, bound to the owner and the KV, any edit refused", async () => {
  using kv = await Deno.openKv(":memory:");
  using other = await Deno.openKv(":memory:");
  const tokens = pageTokens(kv);
  const refused = (e: unknown) => e instanceof AppError && e.code === "invalid-parameter";
  for (const id of [1, 255, 256, 12345, 2 ** 53 - 1]) {
    const token = await tokens.after("alice", id);
    assert.match(token, /^[A-Za-z0-9_-]{22}$/);
    assert.equal(await tokens.position("alice", token), id);
    // Enciphered, not encoded: the next position's token differs in most of its bytes.
    const next = await tokens.after("alice", id - 1 || 2);
    const [x, y] = [token, next].map((t) => atob(t.replaceAll("-", "+").replaceAll("_", "/")));
    assert.ok([...x!].filter((c, i) => c !== y![i]).length >= 8, `${token} and ${next}`);
    await assert.rejects(tokens.position("bob", token), refused, "another owner's");
    await assert.rejects(pageTokens(other).position("alice", token), refused, "another KV's");
  }
  // Every one-character edit of a token is refused.
  const token = await tokens.after("alice", 7);
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  for (let i = 0; i < token.length; i++) {
    for (const c of alphabet) {
      if (c === token[i]) continue;
      const edited = token.slice(0, i) + c + token.slice(i + 1);
      await assert.rejects(tokens.position("alice", edited), refused, edited);
    }
  }
  for (const bad of ["", "abc", "!!!!", btoa("a1:7"), btoa("a1:-1"), "A".repeat(22), token + "A"]) {
    await assert.rejects(tokens.position("alice", bad), refused, bad);
  }
  // The key is made once per KV, and every store on it shares it.
  const key = (await kv.get(PAGE_TOKEN_KEY)).versionstamp;
  assert.equal(await pageTokens(kv).position("alice", token), 7);
  assert.equal((await kv.get(PAGE_TOKEN_KEY)).versionstamp, key);
});

Deno.test("page tokens made together are the tokens made one by one", async () => {
  using kv = await Deno.openKv(":memory:");
  const tokens = pageTokens(kv);
  const ids = [1, 2, 255, 256, 65_537, 2 ** 40 + 3, Number.MAX_SAFE_INTEGER];
  const together = await tokens.afterEach("alice", ids);
  assert.deepEqual(together, await Promise.all(ids.map((id) => tokens.after("alice", id))));
  assert.equal(new Set(together).size, ids.length);
  for (const [n, token] of together.entries()) {
    assert.equal(await tokens.position("alice", token), ids[n]);
    await assert.rejects(tokens.position("bob", token), AppError);
  }
  assert.deepEqual(await tokens.afterEach("alice", []), []);
});

Deno.test("page tokens: processes opening one KV together agree on one key", async () => {
  using kv = await Deno.openKv(":memory:");
  const all = Array.from({ length: 5 }, () => pageTokens(kv));
  const made = await Promise.all(all.map((t, i) => t.after("alice", 100 + i)));
  for (const [i, t] of all.entries()) {
    for (const [j, token] of made.entries()) {
      assert.equal(await t.position("alice", token), 100 + j, `${i}`);
    }
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
