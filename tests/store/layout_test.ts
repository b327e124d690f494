import assert from "node:assert/strict";
import { type Layout1Fixture, loadKv } from "../fixtures/layout1_generate.ts";
import { CURRENT_LAYOUT } from "../../store/layout/layout.ts";
import { RECORD_VERSION } from "../../store/addresses/keys.ts";
import { migrateKv } from "../../store/layout/migrate.ts";
import { openStore } from "../../store/store.ts";
import {
  addressOf,
  type DumpedEntry,
  dumpFile,
  dumpKv,
  killTool,
  ownerOf,
  runTool,
  withKv,
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
      `the KV (${path}) has storage layout 1; this version needs layout 3: run ` +
        "`deno task migrate` first, or start with MIGRATE_ON_START=true",
    );
    assert.deepEqual(await dumpFile(path), FIXTURE.entries, "refusing wrote nothing");

    const migrated = await runTool("migrate", [], { KV_PATH: path });
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(migrated.stderr, /is at layout 3 now \(was 1\)/);
    const entries = await dumpFile(path);
    assert.deepEqual(layoutOf(entries), { version: 3 });
    const keys = entries.map((e) => JSON.stringify(e.key));
    assert.ok(!keys.includes('["migrations","address_owners"]'), "the old marker is gone");
    assert.ok(!keys.includes('["meta","migration"]'), "no progress left");
    assert.deepEqual(countsOf(entries), { "": 4, alice: 5, bob: 7 });
    for (const e of entries.filter((e) => e.key[0] === "addresses")) {
      assert.equal((e as { value: { v: number } }).value.v, 2, JSON.stringify(e));
    }
    // Everything else (catalogue, Idempotency-Keys) is as today's code left it; the counter moved
    // past the v2 PUT at 1000 (layout 3), and layout 2's mark is gone.
    const untouched = (all: typeof entries) =>
      all.filter((e) => ["books", "catalogue", "idempotency"].includes(String(e.key[0])));
    assert.deepEqual(untouched(entries), untouched(FIXTURE.entries));
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
    assert.match(again.stderr, /is at layout 3 already/);
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

/** The versionstamp of every entry of a KV file, by key. */
async function versionstamps(path: string): Promise<Map<string, string>> {
  return await withKv(path, async (kv) => {
    const stamps = new Map<string, string>();
    for await (const e of kv.list({ prefix: [] })) {
      stamps.set(JSON.stringify(e.key), e.versionstamp);
    }
    return stamps;
  });
}

Deno.test("the previous layout (2, the fixture): migrated to 3, the counter passes the highest id and nothing else changes; then v2 PUT refuses every allocated id alike", async () => {
  const { dir, path } = await tempKv();
  try {
    await withKv(path, (kv) => loadKv(kv, LAYOUT2.entries));
    const refused = await refusedStart({ KV_PATH: path });
    assert.equal(
      refused.line,
      `the KV (${path}) has storage layout 2; this version needs layout 3: run ` +
        "`deno task migrate` first, or start with MIGRATE_ON_START=true",
    );
    const before = await versionstamps(path);
    const migrated = await runTool("migrate", [], { KV_PATH: path });
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(migrated.stderr, /is at layout 3 now \(was 2\)/);
    const entries = await dumpFile(path);
    const kept = (all: DumpedEntry[]) =>
      all.filter((e) => !["counters", "meta"].includes(String(e.key[0])));
    assert.deepEqual(kept(entries), kept(LAYOUT2.entries));
    assert.deepEqual(entries.filter((e) => e.key[0] === "counters"), [
      { key: ["counters", "addresses"], u64: "1000" },
    ]);
    assert.deepEqual(layoutOf(entries), { version: 3 });
    // No record was rewritten: every ETag stays.
    const after = await versionstamps(path);
    for (const [key, stamp] of before) {
      if (/^\["(owner_)?addresses"/.test(key)) assert.equal(after.get(key), stamp, key);
    }

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
  // A bare record got the anonymous owner and an index entry.
  assert.deepEqual((await kv.get(["addresses", 7])).value, {
    v: 2,
    owner: "",
    address: addressOf(7),
  });
  assert.deepEqual((await kv.get(["owner_addresses", "", 7])).value, addressOf(7));
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

    const resumed = await runTool("migrate", [], { KV_PATH: path });
    assert.equal(resumed.code, 0, resumed.stderr);
    const clean = await runTool("migrate", [], { KV_PATH: reference });
    assert.equal(clean.code, 0, clean.stderr);
    const [after, expected] = [await dumpFile(path), await dumpFile(reference)];
    assert.equal(after.length, expected.length);
    assert.deepEqual(after, expected);
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
