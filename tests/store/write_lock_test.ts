import assert from "node:assert/strict";
import { openWriteLock, type WriteLock } from "../../store/kv/write_lock.ts";
import { withKvRetry } from "../../store/kv/retry.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether `promise` settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms));
  const settled = await Promise.race([promise.then(() => true, () => true), late]);
  clearTimeout(timer);
  return settled;
}

Deno.test("write lock: off while writing alone, on after a commit that waited, until released by its holder", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-write-lock-" });
  const path = `${dir}/kv.sqlite3`;
  const other = await Deno.open(`${path}.write-lock`, { create: true, write: true });
  const lock = await openWriteLock(path);
  try {
    // Another writer holds the lock: a process that has seen no other writer does not wait.
    await other.lock(true);
    assert.equal(await settlesWithin(lock.commit(() => Promise.resolve("done")), 1_000), true);
    await other.unlock();
    // A commit as slow as one that waited on SQLite's busy handler turns the lock on.
    await lock.commit(() => sleep(30));
    await other.lock(true);
    const queued = lock.commit(() => Promise.resolve("done"));
    assert.equal(await settlesWithin(queued, 100), false, "waits for the other writer");
    await other.unlock();
    assert.equal(await queued, "done");
    // A failing commit releases the lock too.
    await assert.rejects(lock.commit(() => Promise.reject(new Error("boom"))), /boom/);
    await other.lock(true);
    await other.unlock();
  } finally {
    lock.close();
    other.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("write lock: two KV handles on one file with the lock on commit in turns, every commit lands", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-write-lock-" });
  const path = `${dir}/kv.sqlite3`;
  const handles = [await Deno.openKv(path), await Deno.openKv(path)];
  const locks = [await openWriteLock(path), await openWriteLock(path)];
  try {
    for (const lock of locks) await lock.commit(() => sleep(30));
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => {
        const op = handles[i % 2]!.atomic().sum(["n"], 1n);
        if (i % 10 === 0) op.check({ key: ["never"], versionstamp: "00000000000000010000" });
        return locks[i % 2]!.commit(() => op.commit());
      }),
    );
    assert.equal(results.filter((r) => r.ok).length, 180);
    assert.equal((await handles[0]!.get<Deno.KvU64>(["n"])).value?.value, 180n);
  } finally {
    for (const lock of locks) lock.close();
    for (const kv of handles) kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("write lock: a commit refused as busy turns the lock on; another failure does not", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-write-lock-" });
  const path = `${dir}/kv.sqlite3`;
  const other = await Deno.open(`${path}.write-lock`, { create: true, write: true });
  const locks = [await openWriteLock(path), await openWriteLock(path)];
  try {
    const [busy, failing] = locks as [WriteLock, WriteLock];
    // SQLite's busy handler often refuses at once: no slow commit shows the other writer.
    await assert.rejects(busy.commit(() => Promise.reject(new Error("database is locked"))));
    await assert.rejects(failing.commit(() => Promise.reject(new Error("boom"))), /boom/);
    await other.lock(true);
    const queued = busy.commit(() => Promise.resolve("done"));
    assert.equal(await settlesWithin(queued, 100), false, "waits for the other writer");
    assert.equal(await settlesWithin(failing.commit(() => Promise.resolve()), 1_000), true);
    await other.unlock();
    assert.equal(await queued, "done");
  } finally {
    for (const lock of locks) lock.close();
    other.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("write lock: three handles committing at once with retries never run out of attempts", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-write-lock-" });
  const path = `${dir}/kv.sqlite3`;
  const handles = [await Deno.openKv(path), await Deno.openKv(path), await Deno.openKv(path)];
  const locks = await Promise.all(handles.map(() => openWriteLock(path)));
  try {
    // Without the lock, about a quarter of such commits are refused "database is locked" at once.
    const results = await Promise.all(
      Array.from({ length: 96 }, async (_, worker) => {
        const kv = handles[worker % 3]!;
        const lock = locks[worker % 3]!;
        let landed = 0;
        for (let i = 0; i < 20; i++) {
          const op = kv.atomic().sum(["n"], 1n).set(["w", worker, i], "x".repeat(100));
          if ((await withKvRetry(() => lock.commit(() => op.commit()))).ok) landed++;
        }
        return landed;
      }),
    );
    assert.equal(results.reduce((a, b) => a + b, 0), 96 * 20);
    assert.equal((await handles[0]!.get<Deno.KvU64>(["n"])).value?.value, BigInt(96 * 20));
  } finally {
    for (const lock of locks) lock.close();
    for (const kv of handles) kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});
