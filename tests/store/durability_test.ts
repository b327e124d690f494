import assert from "node:assert/strict";
import { runMain } from "../support/process.ts";
import { addressBook, named } from "../support/requests.ts";
import { spawnServer, startTestServer } from "../support/server.ts";

Deno.test("200 concurrent POSTs get 200 distinct ids, all readable afterwards", async () => {
  const server = await startTestServer();
  try {
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) => addressBook(server.httpUrl).create(named(`c${i}`))),
    );
    const bodies = await Promise.all(responses.map((r) => r.json()));
    assert.deepEqual(responses.map((r) => r.status), Array(200).fill(201));
    const ids = bodies.map((b) => b.id);
    assert.equal(new Set(ids).size, 200);
    for (const body of bodies) {
      const res = await fetch(`${server.httpUrl}/addresses/${body.id}`);
      assert.deepEqual(await res.json(), body);
    }
    assert.equal((await addressBook(server.httpUrl).listAll()).length, 200);
  } finally {
    await server.close();
  }
});

Deno.test("restart on the same KV file: every address survives, ids keep growing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-restart-" });
  const env = { KV_PATH: `${dir}/kv.sqlite3`, GRPC_PORT: "off" };
  try {
    const first = await spawnServer(env);
    const created = [];
    for (let i = 0; i < 20; i++) {
      created.push(await (await addressBook(first.httpUrl).create(named(`r${i}`))).json());
    }
    assert.equal(await first.stop(), 0, "SIGTERM exits 0");
    assert.match(first.output(), /"msg":"stopped"/);

    const second = await spawnServer(env);
    try {
      assert.deepEqual(await addressBook(second.httpUrl).listAll(), created);
      const next = await (await addressBook(second.httpUrl).create(named("after"))).json();
      assert.ok(next.id > Math.max(...created.map((c) => c.id)));
    } finally {
      assert.equal(await second.stop(), 0);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("two processes on one KV file: no duplicate id, no 500, nothing lost", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-twoproc-" });
  const env = { KV_PATH: `${dir}/kv.sqlite3`, GRPC_PORT: "off" };
  // Started together: seeding and KV opening race as well.
  const [a, b] = await Promise.all([spawnServer(env), spawnServer(env)]);
  try {
    const responses = await Promise.all(
      Array.from(
        { length: 300 },
        (_, i) => addressBook(i % 2 ? a.httpUrl : b.httpUrl).create(named(`t${i}`)),
      ),
    );
    const statuses = responses.map((r) => r.status);
    const bodies = await Promise.all(responses.map((r) => r.json()));
    assert.ok(statuses.every((s) => s === 201 || s === 503), `statuses: ${statuses}`);
    for (const [i, s] of statuses.entries()) {
      if (s === 503) {
        assert.equal(responses[i]!.headers.get("retry-after"), "1");
        assert.equal(bodies[i].errors[0].error, "service-unavailable");
      }
    }
    const acknowledged = bodies.filter((_, i) => statuses[i] === 201);
    const ids = acknowledged.map((x) => x.id);
    assert.equal(new Set(ids).size, ids.length, "no duplicate id");
    // Every acknowledged write is visible through either process.
    const stored = await addressBook(a.httpUrl).listAll();
    assert.deepEqual(
      stored.map((s) => s.id),
      ids.toSorted((x, y) => x - y),
    );
    assert.ok(acknowledged.length >= 290, `only ${acknowledged.length} of 300 acknowledged`);
  } finally {
    await a.stop();
    await b.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a bad environment variable stops start-up with one line naming it", async () => {
  const cases: [string, string][] = [["PORT", "abc"], ["GRPC_PORT", "99999"], [
    "MAX_BODY_BYTES",
    "-1",
  ]];
  for (const [name, value] of cases) {
    const out = await runMain({ [name]: value, KV_PATH: ":memory:" });
    assert.equal(out.code, 2);
    const text = out.stderr.trim();
    assert.equal(text.split("\n").length, 1, text);
    assert.ok(text.startsWith(`invalid ${name}=`), text);
  }
});

Deno.test("addresses from before ownership: two processes starting together migrate them once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-migrate-" });
  const env = { KV_PATH: `${dir}/kv.sqlite3`, GRPC_PORT: "off", MIGRATE_ON_START: "true" };
  try {
    // A KV file in the layout before ownership: bare addresses, the counter at 120.
    const kv = await Deno.openKv(env.KV_PATH);
    for (let id = 1; id <= 120; id++) {
      await kv.set(["addresses", id], { id, name: `old${id}`, city: "Bonn", postalCode: "53111" });
    }
    await kv.set(["counters", "addresses"], new Deno.KvU64(120n));
    kv.close();

    const [a, b] = await Promise.all([spawnServer(env), spawnServer(env)]);
    try {
      const listed = await addressBook(a.httpUrl).listAll();
      assert.equal(listed.length, 120);
      assert.deepEqual(listed[6], { id: 7, name: "old7", city: "Bonn", postalCode: "53111" });
      const one = await fetch(`${b.httpUrl}/addresses/7`);
      assert.equal(one.status, 200);
      assert.deepEqual(await one.json(), listed[6]);
      assert.equal((await (await addressBook(b.httpUrl).create(named("new"))).json()).id, 121);
    } finally {
      await a.stop();
      await b.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
