import assert from "node:assert/strict";
import fc from "fast-check";
import { type Address, EXAMPLE_INPUT } from "../../lib/address.ts";
import { openAddressStore } from "../../store/addresses/repository.ts";
import { READ_BATCH } from "../../store/addresses/owner_pages.ts";
import { pageBody } from "../../routes/address_page.ts";
import { fuzz, FUZZ_SCALE, FUZZ_SEED } from "../support/fuzz.ts";
import { startTestServer } from "../support/server.ts";
import { addressBook, bearer, taggedInput } from "../support/requests.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const SCOPES = "addresses:read addresses:write";

Deno.test("pageBody: any split into batches gives JSON.stringify({addresses, nextCursor}) byte for byte", () => {
  const address = fc.record({
    id: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    name: fc.string({ minLength: 1, unit: "grapheme" }),
    city: fc.string({ minLength: 1 }),
    postalCode: fc.string({ minLength: 1 }),
  });
  fc.assert(
    fc.property(
      fc.array(fc.array(address, { maxLength: 5 }), { maxLength: 6 }),
      fc.option(fc.string(), { nil: null }),
      (batches, nextCursor) => {
        const body = pageBody();
        for (const batch of batches) body.add(batch);
        const expected = JSON.stringify({ addresses: batches.flat(), nextCursor });
        assert.equal(body.end(nextCursor), expected);
      },
    ),
    { seed: FUZZ_SEED, numRuns: Math.max(1, Math.round(200 * FUZZ_SCALE)) },
  );
});

Deno.test("listBatches hands on list's page in range reads of at most READ_BATCH + 1, with list's cursor", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv, { maxPerOwner: Infinity });
  const total = 2 * READ_BATCH + 7;
  await Promise.all(Array.from({ length: total }, (_, i) => store.create("o", taggedInput(i))));
  await store.create("other", EXAMPLE_INPUT);
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: total + 2 }),
      fc.integer({ min: 0, max: total + 1 }),
      async (limit, start) => {
        const cursor = start === 0
          ? undefined
          : (await store.list("o", { limit: start })).nextCursor ?? undefined;
        const page = await store.list("o", { limit, cursor });
        const batches: Address[][] = [];
        const next = await store.listBatches("o", { limit, cursor }, (b) => batches.push([...b]));
        assert.deepEqual(batches.flat(), page.items.map((s) => s.address));
        assert.equal(next, page.nextCursor);
        assert.ok(batches.every((b) => b.length > 0 && b.length <= READ_BATCH + 1));
        // The page itself: ascending, the cursor's successors, null only on the last page.
        const ids = page.items.map((s) => s.address.id);
        const after = cursor === undefined ? 0 : start;
        const expected = Array.from({ length: total }, (_, i) => i + 1)
          .filter((id) => id > after).slice(0, limit);
        assert.deepEqual(ids, expected);
        assert.equal(next === null, expected.at(-1) === undefined || expected.at(-1) === total);
      },
    ),
    { seed: FUZZ_SEED, numRuns: Math.max(1, Math.round(40 * FUZZ_SCALE)) },
  );
});

/** A KV whose owner-index range reads fail from the `nth` on (as a failing disk would). */
function failingListsFrom(kv: Deno.Kv, state: { nth: number; reads: number }): Deno.Kv {
  return new Proxy(kv, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (name !== "list") return typeof value === "function" ? value.bind(target) : value;
      return (selector: Deno.KvListSelector, options?: Deno.KvListOptions) => {
        const prefix = "prefix" in selector ? selector.prefix : [];
        if (prefix[0] === "owner_addresses" && ++state.reads >= state.nth) {
          const failing = {
            cursor: "",
            next: () => Promise.reject(new TypeError("disk I/O error")),
            [Symbol.asyncIterator]: () => failing,
          };
          return failing;
        }
        return target.list(selector, options);
      };
    },
  });
}

Deno.test("a storage failure in the middle of a long page is 503, never a cut-off 200", async () => {
  const state = { nth: Infinity, reads: 0 };
  const server = await startTestServer(
    { GRPC_PORT: "off" },
    { wrapKv: (kv) => failingListsFrom(kv, state) },
  );
  try {
    const api = addressBook(server.httpUrl);
    for (let i = 0; i < READ_BATCH + 5; i++) {
      assert.equal((await api.create(EXAMPLE_INPUT)).status, 201);
    }
    // The page's first range read succeeds, its second fails.
    state.reads = 0;
    state.nth = 2;
    const response = await fetch(`${server.httpUrl}/addresses?limit=500`);
    assert.equal(response.status, 503);
    assert.equal((await response.json()).errors[0].error, "storage-unavailable");
    state.nth = Infinity;
    const page = await (await fetch(`${server.httpUrl}/addresses?limit=500`)).json();
    assert.equal(page.addresses.length, READ_BATCH + 5);
  } finally {
    await server.close();
  }
});

/** What a page walk did: the ids it listed, in order. */
async function walk(base: string, headers: Record<string, string>, limits: number[]) {
  const ids: number[] = [];
  let cursor: string | null = null;
  for (let i = 0;; i++) {
    const limit = limits[i % limits.length]!;
    const query: string = cursor === null ? "" : `&cursor=${cursor}`;
    const response: Response = await fetch(`${base}/addresses?limit=${limit}${query}`, { headers });
    assert.equal(response.status, 200);
    const page = await response.json();
    assert.ok(page.addresses.length <= limit);
    ids.push(...page.addresses.map((a: Address) => a.id));
    cursor = page.nextCursor;
    if (cursor === null) return ids;
  }
}

Deno.test("a page walk while other clients create and delete: every address that existed throughout appears exactly once, ascending", async () => {
  const server = await startTestServer({ GRPC_PORT: "off", AUTH_JWT_SECRET: SECRET });
  let run = 0;
  try {
    await fuzz(
      "page walk under writes",
      3,
      fc.record({
        limits: fc.array(fc.integer({ min: 1, max: 500 }), { minLength: 1, maxLength: 6 }),
        seeded: fc.integer({ min: 1, max: 3 * READ_BATCH }),
        deletes: fc.array(fc.nat(), { maxLength: 40 }),
        creates: fc.integer({ min: 0, max: 40 }),
      }),
      async ({ limits, seeded, deletes, creates }) => {
        // Each run is an owner of its own, so runs do not see each other's addresses.
        const caller = bearer(await hsToken({ sub: `walker-${run++}`, scope: SCOPES }));
        const api = addressBook(server.httpUrl, caller);
        const before: number[] = [];
        for (let i = 0; i < seeded; i++) {
          before.push((await (await api.create(taggedInput(i))).json()).id);
        }
        const doomed = new Set(deletes.map((n) => before[n % before.length]!));
        const writers = Promise.all([
          (async () => {
            for (const id of doomed) assert.equal((await api.delete(id)).status, 204);
          })(),
          (async () => {
            for (let i = 0; i < creates; i++) {
              assert.equal((await api.create(EXAMPLE_INPUT)).status, 201);
            }
          })(),
        ]);
        const [listed] = await Promise.all([walk(server.httpUrl, caller, limits), writers]);
        assert.equal(new Set(listed).size, listed.length, "no address listed twice");
        assert.deepEqual(listed, listed.toSorted((a, b) => a - b), "ascending ids");
        const shown = new Set(listed);
        for (const id of before) {
          if (!doomed.has(id)) assert.ok(shown.has(id), `address ${id} existed throughout`);
        }
      },
    );
  } finally {
    await server.close();
  }
});
