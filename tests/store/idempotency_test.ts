import assert from "node:assert/strict";
import { AppError } from "../../lib/errors.ts";
import { openAddressStore } from "../../store/addresses/repository.ts";
import {
  addressBook,
  type Fields,
  idempotencyKey,
  MERGE_PATCH,
  sendJson,
} from "../support/requests.ts";
import { spawnServer, startTestServer } from "../support/server.ts";

const ADA = { name: "Ada Lovelace", city: "London", postalCode: "W1J 7NT" };
const GRACE = { name: "Grace Hopper", city: "Arlington", postalCode: "22201" };

function post(base: string, body: unknown, key?: string, headers: Fields = {}) {
  return addressBook(base).create(body, { ...idempotencyKey(key), ...headers });
}

/** What a replay must repeat: status, Location, ETag and body. */
async function answer(res: Response) {
  return {
    status: res.status,
    location: res.headers.get("location"),
    etag: res.headers.get("etag"),
    body: await res.json(),
  };
}

async function addressCount(base: string): Promise<number> {
  return (await addressBook(base).listAll()).length;
}

Deno.test("Idempotency-Key over a socket", async (t) => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  const base = server.httpUrl;
  try {
    await t.step(
      "a repeat replays status, body, Location and ETag, and creates nothing",
      async () => {
        const first = await post(base, ADA, "order-1");
        assert.equal(first.headers.get("idempotent-replayed"), null);
        const a = await answer(first);
        assert.equal(a.status, 201);
        const repeat = await post(base, ADA, "order-1");
        assert.equal(repeat.headers.get("idempotent-replayed"), "true");
        assert.deepEqual(await answer(repeat), a);
        // Whitespace the schema trims does not make it another body.
        const spaced = await post(base, { ...ADA, city: "  London " }, "order-1");
        assert.deepEqual(await answer(spaced), a);
        assert.equal(await addressCount(base), 1);
      },
    );
    await t.step("the replay is the first response even after the address changed", async () => {
      const first = await answer(await post(base, GRACE, "order-2"));
      const patched = await sendJson(`${base}${first.location}`, "PATCH", { city: "Bath" }, {
        "content-type": MERGE_PATCH,
      });
      await patched.body?.cancel();
      assert.deepEqual(await answer(await post(base, GRACE, "order-2")), first);
    });
    await t.step("the same key with another body: 422 idempotency-key-reused", async () => {
      const res = await post(base, GRACE, "order-1");
      assert.equal(res.status, 422);
      const body = await res.json();
      assert.equal(body.errors[0].error, "idempotency-key-reused");
      assert.match(body.errors[0].help, /docs\/errors#idempotency-key-reused$/);
      const de = await post(base, GRACE, "order-1", { "accept-language": "de" });
      assert.match((await de.json()).errors[0].message, /Anfrageschlüssel/);
      assert.equal(await addressCount(base), 2);
    });
    await t.step("without a key every POST creates", async () => {
      const a = await answer(await post(base, ADA));
      const b = await answer(await post(base, ADA));
      assert.notEqual(a.body.id, b.body.id);
    });
    await t.step("keys: 1 to 255 visible ASCII characters, else 400", async () => {
      const longest = "k".repeat(255);
      const ok = await post(base, ADA, longest);
      assert.equal(ok.status, 201);
      await ok.body?.cancel();
      const odd = await post(base, ADA, '"quoted-!~"');
      assert.equal(odd.status, 201);
      await odd.body?.cancel();
      const before = await addressCount(base);
      for (const bad of ["", "k".repeat(256), "with space", "tab\there", "caf\u00e9"]) {
        const res = await post(base, ADA, bad);
        assert.equal(res.status, 400, JSON.stringify(bad));
        const body = await res.json();
        assert.equal(body.errors[0].error, "invalid-parameter");
        assert.match(body.errors[0].detail, /idempotency-key/);
      }
      assert.equal(await addressCount(base), before);
    });
    await t.step("20 concurrent identical POSTs with one key give one address", async () => {
      const before = await addressCount(base);
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => post(base, ADA, "burst").then(answer)),
      );
      for (const a of answers) assert.deepEqual(a, answers[0]);
      assert.equal(answers[0]!.status, 201);
      assert.equal(await addressCount(base), before + 1);
    });
    await t.step("concurrent POSTs with one key and two bodies: one address", async () => {
      const before = await addressCount(base);
      const responses = await Promise.all(
        Array.from({ length: 10 }, (_, i) => post(base, i % 2 ? ADA : GRACE, "contested")),
      );
      const results = await Promise.all(responses.map(answer));
      const created = results.filter((r) => r.status === 201);
      assert.ok(created.length >= 1);
      for (const r of created) assert.deepEqual(r, created[0]);
      for (const r of results.filter((r) => r.status !== 201)) {
        assert.ok(r.status === 409 || r.status === 422, String(r.status));
        assert.equal(
          r.body.errors[0].error,
          r.status === 409 ? "request-in-progress" : "idempotency-key-reused",
        );
      }
      assert.equal(await addressCount(base), before + 1);
    });
  } finally {
    await server.close();
  }
});

Deno.test("keys are scoped to the owner", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  const a = await store.create("alice", ADA, "k");
  const b = await store.create("bob", ADA, "k");
  assert.notEqual(a.address.id, b.address.id);
  assert.equal(b.replayed, false);
  const again = await store.create("alice", ADA, "k");
  assert.deepEqual(again, { ...a, replayed: true });
  await assert.rejects(
    store.create("bob", GRACE, "k"),
    (e) => e instanceof AppError && e.code === "idempotency-key-reused",
  );
  // The key is stored with the address, in the same atomic operation (one versionstamp), and
  // replays its ETag.
  const [key, record] = await kv.getMany<[{ etag: string }, unknown]>([
    ["idempotency", "alice", "k"],
    ["addresses", a.address.id],
  ]);
  assert.equal(key.versionstamp, record.versionstamp);
  assert.equal(key.value?.etag, a.etag);
});

Deno.test("two processes on one KV: 20 identical keyed POSTs give one address", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-idem-" });
  const env = { KV_PATH: `${dir}/kv.sqlite3`, GRPC_PORT: "off" };
  const [a, b] = await Promise.all([spawnServer(env), spawnServer(env)]);
  try {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => post(i % 2 ? a.httpUrl : b.httpUrl, ADA, "twice")),
    ).then((rs) => Promise.all(rs.map(answer)));
    for (const r of answers) assert.deepEqual(r, answers[0]);
    assert.equal(answers[0]!.status, 201);
    assert.equal(await addressCount(a.httpUrl), 1);
  } finally {
    await a.stop();
    await b.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("kill -9 between a keyed POST and its retry: the retry replays", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-kill-" });
  const env = { KV_PATH: `${dir}/kv.sqlite3`, GRPC_PORT: "off" };
  try {
    const first = await spawnServer(env);
    const answered = await answer(await post(first.httpUrl, ADA, "retry-me"));
    assert.equal(answered.status, 201);
    await first.kill();

    const second = await spawnServer(env);
    try {
      const retried = await post(second.httpUrl, ADA, "retry-me");
      assert.equal(retried.headers.get("idempotent-replayed"), "true");
      assert.deepEqual(await answer(retried), answered);
      assert.equal(await addressCount(second.httpUrl), 1);
    } finally {
      await second.kill();
    }

    // Killed while the POST is in flight: whether or not it committed, the retry leaves exactly
    // one address for the key.
    const third = await spawnServer(env);
    const inFlight = post(third.httpUrl, GRACE, "in-flight").catch(() => undefined);
    await third.kill();
    const response = await inFlight;
    await response?.body?.cancel().catch(() => {});
    const fourth = await spawnServer(env);
    try {
      const retried = await answer(await post(fourth.httpUrl, GRACE, "in-flight"));
      assert.equal(retried.status, 201);
      assert.deepEqual(await answer(await post(fourth.httpUrl, GRACE, "in-flight")), retried);
      assert.equal(await addressCount(fourth.httpUrl), 2);
    } finally {
      await fourth.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
