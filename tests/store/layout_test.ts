import assert from "node:assert/strict";
import { type Layout1Fixture, loadKv } from "../fixtures/layout1_generate.ts";
import { type Layout3Fixture, loadVersioned } from "../fixtures/layout3_generate.ts";
import { CURRENT_LAYOUT } from "../../store/layout/layout.ts";
import { IDEMPOTENCY_TTL_MS, RECORD_VERSION } from "../../store/addresses/keys.ts";
import { migrateKv } from "../../store/layout/migrate.ts";
import { openStore } from "../../store/store.ts";
import {
  addressOf,
  AN_ETAG,
  type DumpedEntry,
  dumpFile,
  dumpKv,
  killTool,
  ownerOf,
  runTool,
  sameEntries,
  withKv,
  withoutEtags,
  writeLayout1,
} from "../support/kv_tools.ts";
import { runMain } from "../support/process.ts";
import { addressBook, bearer, V2 } from "../support/requests.ts";
import { spawnServer, startTestServer } from "../support/server.ts";
import { serveMain } from "../support/served.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const FIXTURE: Layout1Fixture = JSON.parse(
  await Deno.readTextFile(new URL("../fixtures/layout1_kv.json", import.meta.url)),
);

async function tempKv(): Promise<{ path: string; dir: string }> {
  const dir = await Deno.makeTempDir({ prefix: "books-layout-" });
  return { dir, path: `${dir}/kv.sqlite3` };
}

/** Starts main.ts and expects it to stop at start-up; returns its exit code and its lines. */
async function refusedStart(env: Record<string, string>): Promise<{ code: number; line: string }> {
  const out = await runMain({ PORT: "0", GRPC_PORT: "off", HOST: "127.0.0.1", ...env });
  // Deno's own warning about the default export (docs/running.md) is not ours.
  const lines = out.stderr.split("\n")
    .filter((l) => l !== "" && !l.startsWith("warning: Detected export default"));
  assert.equal(lines.length, 1, lines.join("\n"));
  return { code: out.code, line: lines[0]! };
}

/** The owner counts of a dump, by owner. */
function countsOf(entries: DumpedEntry[]): Record<string, number> {
  return Object.fromEntries(
    entries.flatMap((e) =>
      e.key[0] === "owner_counts" && "u64" in e ? [[e.key[1], Number(e.u64)]] : []
    ),
  );
}

function layoutOf(entries: { key: Deno.KvKey; value?: unknown }[]): unknown {
  return entries.find((e) => e.key.join("/") === "meta/layout")?.value;
}

Deno.test("a fresh KV is marked with the current layout, once, when several open it together", async () => {
  using kv = await Deno.openKv(":memory:");
  const stores = await Promise.all(
    [0, 1, 2].map(() => openStore(kv, { seedBooks: [], label: "test" })),
  );
  assert.equal(stores.length, 3);
  assert.deepEqual((await kv.get(["meta", "layout"])).value, { version: CURRENT_LAYOUT });
  const created = await stores[1]!.addresses.create("alice", addressOf(1));
  assert.deepEqual((await kv.get(["addresses", created.address.id])).value, {
    v: RECORD_VERSION,
    owner: "alice",
    address: created.address,
    etag: created.etag,
  });
});

Deno.test("regression: a server that finds no layout key while another initialises and seeds is not fooled into layout 1", async () => {
  using kv = await Deno.openKv(":memory:");
  // The interleaving two processes starting together on a fresh KV once hit: the first reads no
  // layout key, the second initialises and seeds the catalogue, then the first lists the KV.
  let other: Promise<unknown> | undefined;
  const first = new Proxy(kv, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (name === "list" && other === undefined) {
        other = openStore(kv, { seedBooks: [], label: "other" });
        return (...args: Parameters<Deno.Kv["list"]>) => {
          const listed = (async function* () {
            await other;
            yield* target.list(...args);
          })();
          return listed;
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const store = await openStore(first, { seedBooks: [], label: "first" });
  assert.ok(other, "the interleaving happened");
  assert.equal(typeof store.addresses.create, "function");
  assert.deepEqual((await kv.get(["meta", "layout"])).value, { version: CURRENT_LAYOUT });
});

Deno.test("today's KV (layout 1, the fixture): refused without a migration, then migrated by deno task migrate", async () => {
  const { dir, path } = await tempKv();
  try {
    await withKv(path, (kv) => loadKv(kv, FIXTURE.entries));
    const refused = await refusedStart({ KV_PATH: path });
    assert.notEqual(refused.code, 0);
    assert.equal(
      refused.line,
      `the KV (${path}) has storage layout 1; this version needs layout ${CURRENT_LAYOUT}: run ` +
        "`deno task migrate` first, or start with MIGRATE_ON_START=true",
    );
    assert.deepEqual(await dumpFile(path), FIXTURE.entries, "refusing wrote nothing");

    const migrated = await runTool("migrate", [], { KV_PATH: path });
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(migrated.stderr, new RegExp(`is at layout ${CURRENT_LAYOUT} now \\(was 1\\)`));
    const entries = withoutEtags(await dumpFile(path));
    assert.deepEqual(layoutOf(entries), { version: CURRENT_LAYOUT });
    const keys = entries.map((e) => JSON.stringify(e.key));
    assert.ok(!keys.includes('["migrations","address_owners"]'), "the old marker is gone");
    assert.ok(!keys.includes('["meta","migration"]'), "no progress left");
    assert.deepEqual(countsOf(entries), { "": 4, alice: 5, bob: 7 });
    for (const e of entries.filter((e) => e.key[0] === "addresses")) {
      const record = (e as { value: { v: number; etag: string } }).value;
      assert.deepEqual([record.v, record.etag], [RECORD_VERSION, AN_ETAG], JSON.stringify(e));
    }
    // The catalogue is as today's code left it; the Idempotency-Keys got an ETag (layout 4) and,
    // having none, an expiry a day away; the counter moved past the v2 PUT at 1000 (layout 3), and
    // layout 2's mark is gone.
    const untouched = (all: typeof entries) =>
      all.filter((e) => ["books", "catalogue"].includes(String(e.key[0])));
    assert.deepEqual(untouched(entries), untouched(FIXTURE.entries));
    const keyRecords = (all: typeof entries) => all.filter((e) => e.key[0] === "idempotency");
    assert.deepEqual(
      keyRecords(entries).map((e) => {
        const { v, etag, expiresAt, ...rest } = (e as { value: Record<string, unknown> }).value;
        assert.deepEqual([v, etag, typeof expiresAt], [RECORD_VERSION, AN_ETAG, "number"]);
        return { key: e.key, value: rest };
      }),
      keyRecords(FIXTURE.entries),
    );
    assert.deepEqual(entries.filter((e) => e.key[0] === "counters"), [
      { key: ["counters", "addresses"], u64: "1000" },
    ]);

    // The server lists for each owner exactly what today's server listed.
    const open = await spawnServer({ KV_PATH: path, GRPC_PORT: "off" });
    try {
      const page = await (await fetch(`${open.httpUrl}/addresses`)).json();
      assert.deepEqual(page.addresses, FIXTURE.listed[""]);
      // The key today's server stored still replays.
      const replay = await addressBook(open.httpUrl).create(
        { name: "Keyed Anon", city: "Köln", postalCode: "50667" },
        { "idempotency-key": "anon-key-1" },
      );
      assert.equal(replay.headers.get("idempotent-replayed"), "true");
      assert.equal((await replay.json()).id, 4);
    } finally {
      await open.stop();
    }
    const secured = await spawnServer({ KV_PATH: path, GRPC_PORT: "off", AUTH_JWT_SECRET: SECRET });
    try {
      const scope = "addresses:read addresses:write";
      for (const owner of ["alice", "bob"]) {
        const auth = bearer(await hsToken({ sub: owner, scope }));
        const page = await (await fetch(`${secured.httpUrl}/addresses`, { headers: auth })).json();
        assert.deepEqual(page.addresses, FIXTURE.listed[owner], owner);
      }
      // POST continues past the v2 PUT at 1000 (ids 16 to 999 are gone: never reused).
      const bob = bearer(await hsToken({ sub: "bob", scope }));
      const next = await addressBook(secured.httpUrl, bob).create(addressOf(0));
      assert.equal((await next.json()).id, 1001);
    } finally {
      await secured.stop();
    }
    // Migrating again finds nothing to do.
    const again = await runTool("migrate", [], { KV_PATH: path });
    assert.equal(again.code, 0);
    assert.match(again.stderr, new RegExp(`is at layout ${CURRENT_LAYOUT} already`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * The KV the previous layout's server wrote: tests/fixtures/layout1_generate.ts run at 8b3bb75,
 * the last commit of layout 2 (its output renamed layout2_kv.json). Bob's v2 PUTs created 1000,
 * above the counter (15), and 7, an id alice had deleted.
 */
const LAYOUT2: Layout1Fixture = JSON.parse(
  await Deno.readTextFile(new URL("../fixtures/layout2_kv.json", import.meta.url)),
);

/**
 * A dump of layout 4 in layout 3's shapes (records and key records without their ETag, at `v: 2`;
 * index entries the bare address), its ETags checked first (`withoutEtags`).
 */
function asLayout3(entries: DumpedEntry[]): DumpedEntry[] {
  return withoutEtags(entries).map((e) => {
    if (!("value" in e)) return e;
    const value = e.value as Record<string, unknown>;
    if (e.key[0] === "owner_addresses") return { key: e.key, value: value.address };
    if (value?.etag !== AN_ETAG) return e;
    const { etag: _, ...rest } = value;
    return { key: e.key, value: { ...rest, v: 2 } };
  });
}

Deno.test("the layout before last (2, the fixture): migrated, the counter passes the highest id and only ETags change; then v2 PUT refuses every allocated id alike", async () => {
  const { dir, path } = await tempKv();
  try {
    await withKv(path, (kv) => loadKv(kv, LAYOUT2.entries));
    const refused = await refusedStart({ KV_PATH: path });
    assert.equal(
      refused.line,
      `the KV (${path}) has storage layout 2; this version needs layout ${CURRENT_LAYOUT}: run ` +
        "`deno task migrate` first, or start with MIGRATE_ON_START=true",
    );
    const migrated = await runTool("migrate", [], { KV_PATH: path });
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(migrated.stderr, new RegExp(`is at layout ${CURRENT_LAYOUT} now \\(was 2\\)`));
    const entries = await dumpFile(path);
    const kept = (all: DumpedEntry[]) =>
      all.filter((e) => !["counters", "meta"].includes(String(e.key[0])));
    assert.deepEqual(kept(asLayout3(entries)), kept(LAYOUT2.entries));
    assert.deepEqual(entries.filter((e) => e.key[0] === "counters"), [
      { key: ["counters", "addresses"], u64: "1000" },
    ]);
    assert.deepEqual(layoutOf(entries), { version: CURRENT_LAYOUT });

    const server = await spawnServer({ KV_PATH: path, GRPC_PORT: "off", AUTH_JWT_SECRET: SECRET });
    try {
      const scope = "addresses:read addresses:write";
      const as = async (sub: string) =>
        addressBook(server.httpUrl, bearer(await hsToken({ sub, scope })));
      const [alice, bob] = [await as("alice"), await as("bob")];
      assert.deepEqual(await alice.listAll(), LAYOUT2.listed.alice);
      assert.deepEqual(await bob.listAll(), LAYOUT2.listed.bob);
      assert.equal((await alice.delete(14)).status, 204);
      const v2 = { "content-type": V2 };
      // Bob's (above the old counter, and an id alice had deleted), alice's deleted one, one never
      // used below the counter: the same answer to anyone who does not hold it.
      const answers = [];
      for (
        const [api, id] of [[alice, 1000], [alice, 7], [alice, 14], [bob, 14], [
          alice,
          500,
        ]] as const
      ) {
        const res = await api.put(id, addressOf(id), v2);
        assert.equal(res.status, 409, `PUT ${id}`);
        const body = await res.json();
        answers.push(body.errors[0].detail.replace(String(id), "<id>"));
        assert.equal(body.errors[0].error, "id-taken");
      }
      assert.equal(new Set(answers).size, 1, answers.join(" | "));
      assert.equal((await bob.put(1000, addressOf(1000), v2)).status, 200, "bob's own");
      const created = await alice.put(1001, addressOf(1001), v2);
      assert.equal(created.status, 201);
      assert.equal((await created.json()).id, 1001);
      assert.ok((await (await alice.create(addressOf(1))).json()).id > 1001);
    } finally {
      await server.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * The KV the previous layout's server wrote: tests/fixtures/layout3_generate.ts run on the tree of
 * 3adb867, the last commit of layout 3, with each entry's versionstamp. Eight addresses created
 * together share one ETag there; alice's keyed creations: one kept as created, one changed after,
 * one deleted (its key an orphan).
 */
const LAYOUT3: Layout3Fixture = JSON.parse(
  await Deno.readTextFile(new URL("../fixtures/layout3_kv.json", import.meta.url)),
);

/**
 * The fixture's entries, its Idempotency-Keys' expiry moved to 12 hours from now: they expired a
 * day after the fixture was made, and a key that does not replay gets no ETag.
 */
function layout3Now(): Layout3Fixture["entries"] {
  const expiresAt = Date.now() + IDEMPOTENCY_TTL_MS / 2;
  return LAYOUT3.entries.map((e) =>
    e.key[0] === "idempotency" && "value" in e
      ? { ...e, value: { ...(e.value as object), expiresAt } }
      : e
  );
}

Deno.test("the previous layout (3, the fixture): migrated to the current layout, each version gets an ETag of its own, replays answer the ETag of what they created", async () => {
  const { dir, path } = await tempKv();
  try {
    const loaded = layout3Now();
    await withKv(path, (kv) => loadVersioned(kv, loaded));
    const refused = await refusedStart({ KV_PATH: path });
    assert.equal(
      refused.line,
      `the KV (${path}) has storage layout 3; this version needs layout ${CURRENT_LAYOUT}: run ` +
        "`deno task migrate` first, or start with MIGRATE_ON_START=true",
    );
    const migrated = await runTool("migrate", [], { KV_PATH: path });
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(migrated.stderr, new RegExp(`is at layout ${CURRENT_LAYOUT} now \\(was 3\\)`));
    const entries = await dumpFile(path);
    assert.deepEqual(layoutOf(entries), { version: CURRENT_LAYOUT });
    // Only the ETags (and the key records' schema version) are new; an orphan's versionstamp went.
    const shape = (all: DumpedEntry[]) =>
      all.filter((e) => e.key[0] !== "meta").map((e) => {
        if (!("value" in e) || e.key[0] !== "idempotency") {
          return { key: e.key, ..."u64" in e ? { u64: e.u64 } : { value: e.value } };
        }
        const { versionstamp: _, ...value } = e.value as Record<string, unknown>;
        return { key: e.key, value };
      });
    assert.deepEqual(shape(asLayout3(entries)), shape(loaded));
    const byKey = new Map(entries.map((e) => [JSON.stringify(e.key), e]));
    const etagAt = (key: Deno.KvKey) =>
      (byKey.get(JSON.stringify(key)) as { value: { etag: string } }).value.etag;

    const server = await spawnServer({ KV_PATH: path, GRPC_PORT: "off", AUTH_JWT_SECRET: SECRET });
    try {
      const scope = "addresses:read addresses:write";
      const books = {
        alice: addressBook(server.httpUrl, bearer(await hsToken({ sub: "alice", scope }))),
        bob: addressBook(server.httpUrl, bearer(await hsToken({ sub: "bob", scope }))),
      };
      const seen = new Set<string>();
      for (const [owner, book] of Object.entries(books)) {
        assert.deepEqual(await book.listAll(2), LAYOUT3.listed[owner], owner);
        for (const address of LAYOUT3.listed[owner] as { id: number }[]) {
          const res = await book.get(address.id);
          const etag = res.headers.get("etag")!;
          await res.body?.cancel();
          assert.equal(etag, etagAt(["addresses", address.id]));
          assert.notEqual(etag, LAYOUT3.etags[`${owner}/${address.id}`], "a new ETag");
          assert.ok(!seen.has(etag), `${owner}/${address.id}: an ETag of its own`);
          seen.add(etag);
          // The layout 3 ETag no longer matches: a client holding it re-reads.
          const stale = await book.patch(address.id, { city: "X" }, {
            "if-match": LAYOUT3.etags[`${owner}/${address.id}`]!,
          });
          assert.equal(stale.status, 412);
          await stale.body?.cancel();
        }
      }
      // Seven of the eight created together shared one ETag in layout 3; now none do.
      const shared = Object.values(LAYOUT3.etags).filter((e, _, all) =>
        all.indexOf(e) !== all.lastIndexOf(e)
      );
      assert.ok(shared.length >= 7, `${shared.length} shared`);
      const replay = async (key: string, name: string, city = "Wien") => {
        const res = await books.alice.create({ name, city, postalCode: "1010" }, {
          "idempotency-key": key,
        });
        assert.equal(res.status, 201, key);
        assert.equal(res.headers.get("idempotent-replayed"), "true", key);
        return { id: (await res.json()).id as number, etag: res.headers.get("etag")! };
      };
      // Kept as created: the replay answers the address's ETag.
      const kept = await replay("alice-kept", "Alice kept");
      assert.equal(kept.etag, etagAt(["addresses", kept.id]));
      // Changed since: the replay answers a version that is gone, an ETag that matches nothing.
      const changed = await replay("alice-changed", "Alice changed");
      assert.notEqual(changed.etag, etagAt(["addresses", changed.id]));
      const stale = await books.alice.delete(changed.id, { "if-match": changed.etag });
      assert.equal(stale.status, 412);
      await stale.body?.cancel();
      // Deleted: the orphan still replays until it expires, with an ETag of its own.
      const deleted = await replay("alice-deleted", "Alice deleted");
      assert.match(deleted.etag, /^"[A-Za-z0-9_-]{22}"$/);
      assert.ok(!seen.has(deleted.etag));
      const orphan = byKey.get(JSON.stringify(["idempotency", "alice", "alice-deleted"])) as {
        value: { orphan: boolean };
      };
      assert.equal(orphan.value.orphan, true);
    } finally {
      await server.stop();
    }
    const again = await runTool("migrate", [], { KV_PATH: path });
    assert.match(again.stderr, new RegExp(`is at layout ${CURRENT_LAYOUT} already`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * Runs `deno task migrate` on `path` (a migration killed midway) and on `reference` (the same KV,
 * untouched): the two end alike but for their random ETags. Returns `path`'s dump.
 */
async function resumedAsClean(path: string, reference: string): Promise<DumpedEntry[]> {
  const resumed = await runTool("migrate", [], { KV_PATH: path });
  assert.equal(resumed.code, 0, resumed.stderr);
  const clean = await runTool("migrate", [], { KV_PATH: reference });
  assert.equal(clean.code, 0, clean.stderr);
  const after = withoutEtags(await dumpFile(path));
  sameEntries(after, withoutEtags(await dumpFile(reference)));
  return after;
}

/**
 * Writes `n` addresses in layout 3 (records `{v: 2, owner, address, key?}`, index entries the bare
 * address, every third one keyed with its key record in the same operation), the counter and
 * the layout key, in big batches.
 */
async function writeLayout3(kv: Deno.Kv, n: number, expiresAt: number): Promise<void> {
  for (let start = 1; start <= n; start += 200) {
    const op = kv.atomic();
    for (let id = start; id < start + 200 && id <= n; id++) {
      const [owner, address] = [ownerOf(id), addressOf(id)];
      const key = id % 3 === 0 ? `k${id}` : undefined;
      op.set(["addresses", id], { v: 2, owner, address, ...key && { key } });
      op.set(["owner_addresses", owner, id], address);
      if (key) op.set(["idempotency", owner, key], { v: 2, address, expiresAt });
    }
    if (!(await op.commit()).ok) throw new Error("could not write the synthetic KV");
  }
  await kv.set(["counters", "addresses"], new Deno.KvU64(BigInt(n)));
  await kv.set(["meta", "layout"], { version: 3 });
}

Deno.test("layout 3 → 4, kill -9 in the middle and again: every record and key once, in bounded batches, as one uninterrupted run", async () => {
  const n = 20_000;
  const { dir, path } = await tempKv();
  const reference = `${dir}/reference.sqlite3`;
  try {
    const expiresAt = Date.now() + IDEMPOTENCY_TTL_MS;
    await withKv(path, (kv) => writeLayout3(kv, n, expiresAt));
    await withKv(reference, (kv) => writeLayout3(kv, n, expiresAt));
    const killed = await killTool("migrate", [], { KV_PATH: path }, /layout 3 → 4: \d+ records/);
    assert.ok(killed.killed, `the migration ended before the kill:\n${killed.stderr}`);
    const midway = await dumpFile(path);
    assert.deepEqual(layoutOf(midway), { version: 3, migratingTo: 4 }, "stopped midway");
    const done = midway.filter((e) =>
      e.key[0] === "addresses" && (e as { value: { v: number } }).value.v === 4
    );
    assert.ok(done.length > 0 && done.length < n, `${done.length} of ${n} when killed`);

    await resumedAsClean(path, reference);
    // Each key record replays its address's ETag (created together, never changed).
    await withKv(path, async (kv) => {
      for (const id of [3, 3000, n - n % 3]) {
        const [record, key] = await kv.getMany<[{ etag: string }, { etag: string }]>([
          ["addresses", id],
          ["idempotency", ownerOf(id), `k${id}`],
        ]);
        assert.equal(key.value?.etag, record.value?.etag, `id ${id}`);
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("MIGRATE_ON_START=true: two servers starting together on the fixture migrate it once", async () => {
  const { dir, path } = await tempKv();
  try {
    await withKv(path, (kv) => loadKv(kv, FIXTURE.entries));
    const env = { KV_PATH: path, GRPC_PORT: "off", MIGRATE_ON_START: "true" };
    const [a, b] = await Promise.all([spawnServer(env), spawnServer(env)]);
    try {
      for (const server of [a, b]) {
        const page = await (await fetch(`${server.httpUrl}/addresses`)).json();
        assert.deepEqual(page.addresses, FIXTURE.listed[""]);
      }
    } finally {
      await a.stop();
      await b.stop();
    }
    const entries = await dumpFile(path);
    assert.deepEqual(layoutOf(entries), { version: CURRENT_LAYOUT });
    assert.deepEqual(countsOf(entries), { "": 4, alice: 5, bob: 7 }, "each address counted once");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno serve --parallel with MIGRATE_ON_START=true: the workers migrate the fixture together, once", async () => {
  const { dir, path } = await tempKv();
  try {
    await withKv(path, (kv) => loadKv(kv, FIXTURE.entries));
    const server = await serveMain({
      permissions: ["--allow-net", "--allow-env", "--allow-read", `--allow-write=${dir}`],
      env: { KV_PATH: path, LOG_LEVEL: "warn", MIGRATE_ON_START: "true" },
      workers: 2,
    });
    try {
      for (let i = 0; i < 4; i++) {
        const page = await (await fetch(`${server.baseUrl}/addresses`)).json();
        assert.deepEqual(page.addresses, FIXTURE.listed[""]);
      }
    } finally {
      await server.stop();
    }
    const entries = await dumpFile(path);
    assert.deepEqual(layoutOf(entries), { version: CURRENT_LAYOUT });
    assert.deepEqual(countsOf(entries), { "": 4, alice: 5, bob: 7 });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a KV of a newer layout: the server, migrate and export refuse it with one line; nothing is written", async () => {
  const { dir, path } = await tempKv();
  try {
    await withKv(path, async (kv) => {
      await kv.set(["meta", "layout"], { version: CURRENT_LAYOUT + 1 });
      await kv.set(["addresses", 1], { v: CURRENT_LAYOUT + 1, whatever: "a future shape" });
    });
    const before = await dumpFile(path);
    const refused = await refusedStart({ KV_PATH: path, MIGRATE_ON_START: "true" });
    const newer = `has storage layout ${CURRENT_LAYOUT + 1}, newer than this version's ` +
      `${CURRENT_LAYOUT}`;
    assert.ok(refused.line.includes(newer), refused.line);
    for (const tool of ["migrate", "export"] as const) {
      const run = await runTool(tool, [], { KV_PATH: path });
      assert.equal(run.code, 1, tool);
      assert.ok(run.stderr.includes(newer), run.stderr);
      assert.equal(run.stdout, "", "no partial export");
    }
    assert.deepEqual(await dumpFile(path), before);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a running server stops writing once a migration begins; reads go on, readiness turns 503", async () => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  const api = addressBook(server.httpUrl);
  const post = () => api.create(addressOf(1));
  try {
    assert.equal((await post()).status, 201);
    assert.equal((await fetch(`${server.httpUrl}/readyz`)).status, 200);
    // What a migration to a later layout does first.
    await withKv(
      server.kvPath,
      (kv) =>
        kv.set(["meta", "layout"], { version: CURRENT_LAYOUT, migratingTo: CURRENT_LAYOUT + 1 }),
    );
    const refused = await post();
    assert.equal(refused.status, 503);
    assert.equal((await refused.json()).errors[0].error, "service-unavailable");
    const deleted = await api.delete(1);
    assert.equal(deleted.status, 503);
    await deleted.body?.cancel();
    const page = await (await fetch(`${server.httpUrl}/addresses`)).json();
    assert.equal(page.addresses.length, 1, "the read still answers, and nothing was added");
    const ready = await fetch(`${server.httpUrl}/readyz`);
    assert.equal(ready.status, 503);
    await ready.body?.cancel();
  } finally {
    await server.close();
  }
});

Deno.test("two migrations running together share the work: every record once, counts exact", async () => {
  using kv = await Deno.openKv(":memory:");
  await writeLayout1(kv, 2000);
  const events: number[] = [];
  const results = await Promise.all([
    migrateKv(kv, "test", (e) => events.push(e.items)),
    migrateKv(kv, "test", (e) => events.push(e.items)),
  ]);
  assert.deepEqual(results.map((r) => r.from), [1, 1]);
  assert.ok(events.length > 2000 / 90, `${events.length} batches`);
  const expected = new Map<string, number>();
  for (let id = 1; id <= 2000; id++) {
    const owner = id % 7 === 0 ? "" : ownerOf(id);
    expected.set(owner, (expected.get(owner) ?? 0) + 1);
  }
  for (const [owner, n] of expected) {
    assert.equal(Number((await kv.get<Deno.KvU64>(["owner_counts", owner])).value), n, owner);
  }
  // A bare record got the anonymous owner, an ETag and an index entry with them.
  const [record, index] = await kv.getMany<[{ etag: string }, unknown]>([
    ["addresses", 7],
    ["owner_addresses", "", 7],
  ]);
  const etag = record.value!.etag;
  assert.deepEqual(record.value, { v: RECORD_VERSION, owner: "", address: addressOf(7), etag });
  assert.deepEqual(index.value, { etag, address: addressOf(7) });
  // Every record once: 2000 ETags, all different.
  const etags = new Set<string>();
  for await (const e of kv.list<{ etag: string }>({ prefix: ["addresses"] })) {
    etags.add(e.value.etag);
  }
  assert.equal(etags.size, 2000);
});

Deno.test("kill -9 in the middle of deno task migrate, then again: the same KV as one uninterrupted run", async () => {
  const n = 30_000;
  const { dir, path } = await tempKv();
  const reference = `${dir}/reference.sqlite3`;
  try {
    await withKv(path, (kv) => writeLayout1(kv, n));
    await withKv(reference, (kv) => writeLayout1(kv, n));
    const killed = await killTool("migrate", [], { KV_PATH: path }, /records/);
    assert.ok(killed.killed, `the migration ended before the kill:\n${killed.stderr}`);
    const midway = await dumpFile(path);
    assert.deepEqual(layoutOf(midway), { version: 1, migratingTo: 2 }, "stopped midway");
    const progress = midway.find((e) => e.key.join("/") === "meta/migration") as {
      value: { items: number };
    };
    assert.ok(progress.value.items > 0 && progress.value.items < n, `${progress.value.items}`);

    const after = await resumedAsClean(path, reference);
    assert.deepEqual(layoutOf(after), { version: CURRENT_LAYOUT });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("layout 1 read by dumpKv is what loadKv wrote (the fixture round-trips)", async () => {
  using kv = await Deno.openKv(":memory:");
  await loadKv(kv, FIXTURE.entries);
  assert.deepEqual(await dumpKv(kv), FIXTURE.entries);
});
