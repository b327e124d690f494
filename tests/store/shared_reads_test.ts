import assert from "node:assert/strict";
import fc from "fast-check";
import { REMOTE_READS_AT_ONCE, sharedReads } from "../../store/kv/read.ts";

/** A KV handle counting its `getMany` calls (and the keys of each), failing them while `fail` is set. */
function countingKv(kv: Deno.Kv) {
  const calls: number[] = [];
  const state = { fail: undefined as string | undefined };
  const handle = new Proxy(kv, {
    get(target, name) {
      if (name === "getMany") {
        return (keys: Deno.KvKey[]) => {
          calls.push(keys.length);
          if (state.fail !== undefined) return Promise.reject(new TypeError(state.fail));
          return target.getMany(keys);
        };
      }
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { handle, calls, state };
}

async function withKv(run: (kv: Deno.Kv) => Promise<void>) {
  const kv = await Deno.openKv(":memory:");
  try {
    await run(kv);
  } finally {
    kv.close();
  }
}

Deno.test("shared reads: reads asked for together share getMany calls, each answered with its own keys", async () => {
  await withKv(async (kv) => {
    for (let i = 1; i <= 40; i++) await kv.set(["k", i], `v${i}`);
    const { handle, calls } = countingKv(kv);
    const read = sharedReads(handle);
    // 30 reads of one key and 5 of two, asked for at once.
    const ones = Array.from({ length: 30 }, (_, i) => read([["k", i + 1]]));
    const twos = Array.from({ length: 5 }, (_, i) => read([["k", 31 + i], ["k", 36 + i]]));
    const got = await Promise.all([...ones, ...twos]);
    for (let i = 0; i < 30; i++) {
      assert.deepEqual(got[i]!.map((e) => [e.key, e.value]), [[["k", i + 1], `v${i + 1}`]]);
    }
    for (let i = 0; i < 5; i++) {
      assert.deepEqual(got[30 + i]!.map((e) => e.value), [`v${31 + i}`, `v${36 + i}`]);
    }
    // Two went alone (the calls at once), the rest in calls of at most 10 keys.
    assert.deepEqual(calls.slice(0, 2), [1, 1]);
    assert.ok(calls.every((n) => n <= 10), `calls of ${calls}`);
    assert.equal(calls.reduce((a, b) => a + b, 0), 40);
    assert.ok(calls.length <= 2 + Math.ceil(38 / 10) + 1, `${calls.length} calls`);
  });
});

Deno.test("shared reads: a read alone goes at once, and a missing key reads as null", async () => {
  await withKv(async (kv) => {
    const { handle, calls } = countingKv(kv);
    const read = sharedReads(handle);
    const [entry] = await read([["absent", 1]]);
    assert.equal(entry!.value, null);
    assert.equal(entry!.versionstamp, null);
    assert.deepEqual(calls, [1]);
  });
});

Deno.test("shared reads: a failed call rejects every read it carried, and the next calls go on", async () => {
  await withKv(async (kv) => {
    await kv.set(["k", 1], "one");
    const { handle, state } = countingKv(kv);
    const read = sharedReads(handle);
    state.fail = "database is locked";
    const failed = await Promise.allSettled(Array.from({ length: 12 }, () => read([["k", 1]])));
    assert.ok(failed.every((r) => r.status === "rejected" && /locked/.test(String(r.reason))));
    state.fail = undefined;
    const [entry] = await read([["k", 1]]);
    assert.equal(entry!.value, "one");
  });
});

Deno.test("shared reads: no read of more than 10 keys or of none", async () => {
  await withKv(async (kv) => {
    const read = sharedReads(kv);
    await assert.rejects(read([]), RangeError);
    await assert.rejects(read(Array.from({ length: 11 }, (_, i) => ["k", i])), RangeError);
  });
});

Deno.test("shared reads: any mix of reads and writes answers what kv.get answers after the read was asked", async () => {
  await withKv(async (kv) => {
    const read = sharedReads(kv);
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ set: fc.integer({ min: 1, max: 8 }), value: fc.string() }),
            fc.record({
              get: fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 3 }),
            }),
          ),
          { maxLength: 40 },
        ),
        async (steps) => {
          const model = new Map<number, string>();
          for (const id of [1, 2, 3, 4, 5, 6, 7, 8]) await kv.delete(["m", id]);
          const pending: Promise<void>[] = [];
          for (const step of steps) {
            if ("set" in step) {
              // Writes are awaited: every read asked for after a write sees it.
              await Promise.all(pending.splice(0));
              await kv.set(["m", step.set], step.value);
              model.set(step.set, step.value);
            } else {
              const expected = step.get.map((id) => model.get(id) ?? null);
              pending.push(
                read(step.get.map((id) => ["m", id])).then((entries) => {
                  assert.deepEqual(entries.map((e) => e.value), expected);
                }),
              );
            }
          }
          await Promise.all(pending);
        },
      ),
      { numRuns: 100 },
    );
  });
});

Deno.test("shared reads: with a bound of N calls at once (a remote KV's), N reads go alone before any waits", async () => {
  await withKv(async (kv) => {
    for (let i = 1; i <= 50; i++) await kv.set(["k", i], i);
    const { handle, calls } = countingKv(kv);
    const read = sharedReads(handle, REMOTE_READS_AT_ONCE);
    const got = await Promise.all(Array.from({ length: 50 }, (_, i) => read([["k", i + 1]])));
    assert.deepEqual(got.map(([e]) => e!.value), Array.from({ length: 50 }, (_, i) => i + 1));
    assert.deepEqual(calls.slice(0, REMOTE_READS_AT_ONCE), Array(REMOTE_READS_AT_ONCE).fill(1));
    assert.ok(calls.length < 50, `the reads past ${REMOTE_READS_AT_ONCE} shared calls: ${calls}`);
  });
});
