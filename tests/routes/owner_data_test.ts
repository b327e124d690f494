import assert from "node:assert/strict";
import {
  type AddressBook,
  addressBook,
  answerOf,
  bearer,
  idempotencyKey,
  named,
} from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const RW = "addresses:read addresses:write";

/** Creates an address named `name`, with an Idempotency-Key when given. */
async function post(owner: AddressBook, name: string, key?: string) {
  return await answerOf(await owner.create(named(name), idempotencyKey(key)));
}

function ndjson(text: string): unknown[] {
  assert.ok(text === "" || text.endsWith("\n"), "every line ends with a newline");
  return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
}

Deno.test("per-owner export and erasure over a socket", async (t) => {
  const server = await startTestServer({ GRPC_PORT: "off", AUTH_JWT_SECRET: SECRET });
  const base = server.httpUrl;
  const alice = addressBook(base, bearer(await hsToken({ sub: "alice", scope: RW })));
  const bob = addressBook(base, bearer(await hsToken({ sub: "bob", scope: RW })));
  try {
    const mine: { id: number }[] = [];
    for (let i = 0; i < 620; i++) {
      // More than one page of the export; bob's interleave.
      mine.push((await post(alice, `a${i}`, i < 5 ? `key-${i}` : undefined)).body);
      if (i % 100 === 0) await post(bob, `b${i}`);
    }
    const bobs = await bob.listAll();
    await t.step(
      "NDJSON by default: the caller's addresses, one per line, by ascending id",
      async () => {
        const res = await alice.export();
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("content-type"), "application/x-ndjson");
        assert.equal(
          res.headers.get("content-disposition"),
          'attachment; filename="addresses.ndjson"',
        );
        assert.equal(res.headers.get("vary"), "Accept");
        assert.match(res.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
        assert.deepEqual(ndjson(await res.text()), mine);
        const explicit = await alice.export({ accept: "application/x-ndjson" });
        assert.deepEqual(ndjson(await explicit.text()), mine);
      },
    );
    await t.step("JSON with Accept: application/json", async () => {
      const res = await bob.export({ accept: "application/json" });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "application/json");
      assert.deepEqual(await res.json(), { addresses: bobs });
      const weighted = await bob.export({ accept: "application/x-ndjson;q=0.5, application/json" });
      assert.deepEqual(await weighted.json(), { addresses: bobs });
    });
    await t.step("an Accept that allows neither is 406", async () => {
      const res = await alice.export({ accept: "text/html" });
      assert.equal(res.status, 406);
      assert.equal((await res.json()).errors[0].error, "not-acceptable");
    });
    await t.step("/addresses/export is not an id; ids still route", async () => {
      const one = await fetch(`${base}/addresses/${mine[3]!.id}`, {
        headers: bearer(await hsToken({ sub: "alice", scope: RW })),
      });
      assert.equal(one.status, 200);
      assert.deepEqual(await one.json(), mine[3]);
    });
    await t.step("scopes: export needs addresses:read, erasure addresses:write", async () => {
      const noToken = await fetch(`${base}/addresses/export`);
      assert.equal(noToken.status, 401);
      await noToken.body?.cancel();
      const writer = addressBook(
        base,
        bearer(await hsToken({ sub: "alice", scope: "addresses:write" })),
      );
      const res = await writer.export();
      assert.equal(res.status, 403);
      assert.match(res.headers.get("www-authenticate") ?? "", /addresses:read/);
      await res.body?.cancel();
      const reader = addressBook(
        base,
        bearer(await hsToken({ sub: "alice", scope: "addresses:read" })),
      );
      const erase = await reader.erase({ "if-match": "*" });
      assert.equal(erase.status, 403);
      await erase.body?.cancel();
      assert.equal(ndjson(await (await alice.export()).text()).length, 620, "nothing erased");
    });
    await t.step("erasure needs If-Match: * (428 without, 412 with another tag)", async () => {
      const missing = await alice.erase();
      assert.equal(missing.status, 428);
      assert.equal((await missing.json()).errors[0].error, "precondition-required");
      const other = await alice.erase({ "if-match": '"abc"' });
      assert.equal(other.status, 412);
      assert.equal((await other.json()).errors[0].error, "precondition-failed");
      assert.equal(ndjson(await (await alice.export()).text()).length, 620, "nothing erased");
    });
    await t.step(
      "erasure: everything of the caller goes, others' stays; repeating is 204",
      async () => {
        const res = await alice.erase({ "if-match": "*" });
        assert.equal(res.status, 204);
        assert.equal(await res.text(), "");
        assert.deepEqual(await alice.listAll(), []);
        assert.equal(await (await alice.export()).text(), "");
        assert.deepEqual(await (await alice.export({ accept: "application/json" })).json(), {
          addresses: [],
        });
        assert.deepEqual(await bob.listAll(), bobs);
        const again = await alice.erase({ "if-match": "*" });
        assert.equal(again.status, 204);
        // The Idempotency-Keys went too: the same key creates a new address.
        const created = await post(alice, "a0", "key-0");
        assert.equal(created.status, 201);
        assert.ok(created.body.id > mine[mine.length - 1]!.id);
      },
    );
    await t.step(
      "stored state: no key, index entry or count of the erased owner is left",
      async () => {
        await alice.erase({ "if-match": "*" });
        await server.shutdown(); // keeps the KV file
        using kv = await Deno.openKv(server.kvPath);
        for (const prefix of [["owner_addresses", "alice"], ["idempotency", "alice"]]) {
          for await (const e of kv.list({ prefix })) assert.fail(`left: ${JSON.stringify(e.key)}`);
        }
        assert.equal((await kv.get(["owner_counts", "alice"])).value, null);
        assert.equal(Number((await kv.get<Deno.KvU64>(["owner_counts", "bob"])).value), 7);
      },
    );
  } finally {
    await server.close();
  }
});

Deno.test("the OpenAPI document describes the export and the erasure", async () => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  try {
    const doc = await (await fetch(`${server.httpUrl}/openapi.json`)).json();
    const exportOp = doc.paths["/addresses/export"].get;
    assert.deepEqual(Object.keys(exportOp.responses["200"].content).sort(), [
      "application/json",
      "application/x-ndjson",
    ]);
    const erase = doc.paths["/addresses"].delete;
    assert.ok(erase.responses["204"] && erase.responses["428"] && erase.responses["412"]);
    assert.ok(erase.parameters.some((p: { name: string }) => p.name === "if-match"));
  } finally {
    await server.close();
  }
});
