import assert from "node:assert/strict";
import { withWriteLock } from "../store/kv/write_lock.ts";

Deno.test("write lock: two handles on one KV file commit in turns, every commit lands, and close releases the lock", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-write-lock-" });
  const path = `${dir}/kv.sqlite3`;
  try {
    const [one, two] = [
      await withWriteLock(await Deno.openKv(path), path),
      await withWriteLock(await Deno.openKv(path), path),
    ];
    // Concurrent commits from both handles, some failing their check: none is lost or stuck.
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => {
        const kv = i % 2 ? one : two;
        const op = kv.atomic().sum(["n"], 1n);
        if (i % 10 === 0) op.check({ key: ["never"], versionstamp: "00000000000000010000" });
        return op.commit();
      }),
    );
    assert.equal(results.filter((r) => r.ok).length, 180);
    assert.equal((await one.get<Deno.KvU64>(["n"])).value?.value, 180n);
    one.close();
    two.close();
    // Released: the lock file can be locked at once.
    const lock = await Deno.open(`${path}.write-lock`, { write: true });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const locked = await Promise.race([
      lock.lock(true).then(() => true),
      new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), 5_000)),
    ]);
    clearTimeout(timer);
    assert.ok(locked, "the lock was still held after both handles closed");
    lock.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
