import assert from "node:assert/strict";
import { AppError } from "../../lib/errors.ts";
import { openChangeLog, type PreparedWrite } from "../../store/addresses/change_log.ts";
import {
  type AddressChange,
  type FeedTokens,
  openAddressFeed,
} from "../../store/addresses/feed.ts";

const tokens: FeedTokens = {
  seal: (owner, n) => Promise.resolve(`${owner}:${n}`),
  open: (owner, token) => {
    const [o, n] = token.split(":");
    if (o !== owner) return Promise.reject(new AppError("invalid-parameter", "not yours"));
    return Promise.resolve(Number(n));
  },
};

function write(owner: string, id: number, name: string): PreparedWrite {
  const address = { id, name, city: "London", postalCode: "W1J 7NT" };
  return {
    changes: [{ owner, change: { type: "created", id, address, etag: `"e${id}"` } }],
    claims: [`a${id}`],
    cost: { checks: 1, mutations: 1 },
    apply: (op) => {
      op.check({ key: ["addresses", id], versionstamp: null }).set(["addresses", id], address);
    },
  };
}

async function take(stream: AsyncIterator<AddressChange>, n: number): Promise<AddressChange[]> {
  const out: AddressChange[] = [];
  for (let i = 0; i < n; i++) {
    const next = await stream.next();
    if (next.done) break;
    out.push(next.value);
  }
  return out;
}

Deno.test("change log: writes waiting together commit together, numbered per owner in order", async () => {
  const kv = await Deno.openKv(":memory:");
  const log = openChangeLog(kv, { retentionMs: 60_000, guard: (op) => op });
  const feed = openAddressFeed(kv, {
    log,
    tokens,
    retentionMs: 60_000,
    maxStreams: 10,
    maxStreamsPerCaller: 5,
    pollMs: 0,
  });
  const alice = await feed.open("alice", { caller: "alice" });
  const outcomes = await Promise.all(
    Array.from(
      { length: 50 },
      (_, i) => log.commit(write(i % 2 ? "bob" : "alice", i + 1, `n${i}`)),
    ),
  );
  assert.ok(outcomes.every((o) => o.ok));
  // Fewer commits than writes: they were batched.
  assert.ok(new Set(outcomes.map((o) => o.ok && o.versionstamp)).size < 50);
  const got = await take(alice, 25);
  assert.deepEqual(got.map((c) => c.id), Array.from({ length: 25 }, (_, i) => 2 * i + 1));
  assert.equal(got.at(-1)!.token, "alice:25");
  // Another write of an id claimed in the same batch waits for the next one; a refused check
  // appends nothing.
  const again = await log.commit(write("alice", 1, "again"));
  assert.equal(again.ok, false);
  const head = await kv.get(["feed_seq", "alice"]);
  assert.equal(Number((head.value as Deno.KvU64).value), 25);
  feed.closeAll();
  kv.close();
});

Deno.test("feed: resume after a token yields exactly what came after; another owner's never", async () => {
  const kv = await Deno.openKv(":memory:");
  const log = openChangeLog(kv, { retentionMs: 60_000, guard: (op) => op });
  const feed = openAddressFeed(kv, {
    log,
    tokens,
    retentionMs: 60_000,
    maxStreams: 10,
    maxStreamsPerCaller: 2,
    pollMs: 0,
  });
  for (let i = 1; i <= 5; i++) await log.commit(write("alice", i, `a${i}`));
  await log.commit(write("bob", 100, "b"));
  const resumed = await feed.open("alice", { caller: "alice", after: "alice:2" });
  assert.deepEqual((await take(resumed, 3)).map((c) => c.id), [3, 4, 5]);
  await assert.rejects(feed.open("alice", { caller: "alice", after: "bob:1" }), /not yours/);
  await feed.open("alice", { caller: "alice" });
  await assert.rejects(feed.open("alice", { caller: "alice" }), /At most 2 streams/);
  feed.closeAll();
  kv.close();
});

Deno.test("feed: a write of another process on the same KV file wakes a stream (poll)", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/kv.sqlite3`;
  const kvA = await Deno.openKv(path);
  const kvB = await Deno.openKv(path);
  const logA = openChangeLog(kvA, { retentionMs: 60_000, guard: (op) => op });
  const logB = openChangeLog(kvB, { retentionMs: 60_000, guard: (op) => op });
  const feed = openAddressFeed(kvA, {
    log: logA,
    tokens,
    retentionMs: 60_000,
    maxStreams: 10,
    maxStreamsPerCaller: 5,
    pollMs: 50,
  });
  // A has written for alice: it knows her log's head.
  assert.equal((await logA.commit(write("alice", 6, "from A"))).ok, true);
  const stream = await feed.open("alice", { caller: "alice" });
  const started = performance.now();
  const first = stream.next();
  await logB.commit(write("alice", 7, "from B"));
  const got = await first;
  assert.equal(got.done, false);
  assert.equal(got.value!.id, 7);
  console.log(`delivered across handles in ${(performance.now() - started).toFixed(1)} ms`);
  // And a conflict: A's cached head is stale after B's commit, so A's next commit retries.
  const outcome = await logA.commit(write("alice", 8, "from A"));
  assert.equal(outcome.ok, false);
  assert.equal((await logA.commit(write("alice", 8, "from A"))).ok, true);
  assert.equal((await stream.next()).value!.id, 8);
  feed.closeAll();
  kvA.close();
  kvB.close();
  await Deno.remove(dir, { recursive: true });
});
