/**
 * Two owners with real tokens over sockets: each tries every method on the other's ids and sees
 * what it would see for an id nobody holds; lists and pages hold only the caller's own.
 */
import assert from "node:assert/strict";
import { JSON_BODY_TYPES } from "../../lib/http/body.ts";
import { type Address, addressBook, bearer, named } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const SCOPES = "addresses:read addresses:write";
// Above any id the tests hand out, and within how far above the counter a v2 PUT may create.
const UNUSED_ID = 500_000;

interface Created extends Address {
  etag: string;
}

interface Seen {
  status: number;
  code: string | undefined;
  location: boolean;
}

Deno.test("owners: another owner's addresses do not exist for the caller", async (t) => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET });
  const alice = await hsToken({ sub: "alice", scope: SCOPES });
  const bob = await hsToken({ sub: "bob", scope: SCOPES });
  const call = (token: string, method: string, path: string, init: RequestInit = {}) =>
    fetch(`${server.httpUrl}${path}`, {
      ...init,
      method,
      headers: { ...bearer(token), ...init.headers as Record<string, string> },
    });
  const create = async (token: string, name: string): Promise<Created> => {
    const res = await addressBook(server.httpUrl, bearer(token)).create(named(name));
    assert.equal(res.status, 201);
    return { ...(await res.json()), etag: res.headers.get("etag")! };
  };
  const seen = async (res: Response): Promise<Seen> => {
    const text = await res.text();
    const code = text.startsWith("{") ? JSON.parse(text).errors?.[0]?.error : undefined;
    return { status: res.status, code, location: res.headers.has("location") };
  };
  try {
    const alices: Created[] = [];
    for (const name of ["A1", "A2", "A3"]) alices.push(await create(alice, name));
    const bobs = [await create(bob, "B1")];
    const target = alices[0]!;

    await t.step("every method on alice's id answers bob as on an id nobody holds", async () => {
      const body = JSON.stringify({ name: "Mallory", city: "Evil", postalCode: "666" });
      const attempts: [string, RequestInit][] = [
        ["GET", {}],
        ["HEAD", {}],
        ["DELETE", {}],
        ["DELETE", { headers: { "if-match": target.etag } }],
        ["DELETE", { headers: { "if-match": "*" } }],
        ["PATCH", {
          headers: { "content-type": "application/merge-patch+json" },
          body: '{"city":"Evil"}',
        }],
        ["PATCH", {
          headers: { "content-type": "application/merge-patch+json", "if-match": target.etag },
          body: '{"city":"Evil"}',
        }],
      ];
      for (const type of JSON_BODY_TYPES) {
        attempts.push(["PUT", { headers: { "content-type": type }, body }]);
        attempts.push(["PUT", {
          headers: { "content-type": type, "if-match": target.etag },
          body,
        }]);
        attempts.push(["PUT", { headers: { "content-type": type, "if-match": "*" }, body }]);
      }
      for (const [index, [method, init]] of attempts.entries()) {
        const label = `${method} ${JSON.stringify(init.headers ?? {})}`;
        const onTheirs = await seen(await call(bob, method, `/addresses/${target.id}`, init));
        // A fresh id each time: a v2 PUT creates at the id it names, so it is nobody's only once.
        const nobodys = `/addresses/${UNUSED_ID + index}`;
        const onNobodys = await seen(await call(bob, method, nobodys, init));
        const v2 = /v2/.test(String((init.headers as Record<string, string>)?.["content-type"]));
        const conditional = "if-match" in ((init.headers ?? {}) as Record<string, string>);
        if (method === "PUT" && v2 && !conditional) {
          // A v2 PUT creates at the path id; an id held by anyone is taken (docs/http.md), and
          // the other owner's address is left as it was (checked below).
          assert.deepEqual(onTheirs, { status: 409, code: "id-taken", location: false }, label);
          assert.equal(onNobodys.status, 201, label);
          continue;
        }
        assert.deepEqual(onTheirs, onNobodys, label);
        assert.notEqual(onTheirs.status, 200, label);
        assert.notEqual(onTheirs.status, 204, label);
      }
    });

    await t.step("alice's addresses are untouched, bob's creations got new ids", async () => {
      for (const address of alices) {
        const res = await call(alice, "GET", `/addresses/${address.id}`);
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("etag"), address.etag);
        const { etag: _, ...expected } = address;
        assert.deepEqual(await res.json(), expected);
      }
    });

    await t.step("lists and pages hold only the caller's own addresses", async () => {
      const ids: number[] = [];
      let cursor: string | null = null;
      do {
        const query: string = cursor ? `?limit=2&cursor=${encodeURIComponent(cursor)}` : "?limit=2";
        const res = await call(alice, "GET", `/addresses${query}`);
        assert.equal(res.status, 200);
        const page = await res.json();
        assert.ok(page.addresses.length <= 2);
        ids.push(...page.addresses.map((a: { id: number }) => a.id));
        cursor = page.nextCursor;
        if (cursor) {
          // Alice's cursor is hers: in bob's hands it is no cursor this server issued.
          const other = await call(bob, "GET", `/addresses?cursor=${encodeURIComponent(cursor)}`);
          assert.equal(other.status, 400);
          assert.equal((await other.json()).errors[0].error, "invalid-parameter");
        }
      } while (cursor);
      assert.deepEqual(ids, alices.map((a) => a.id));
      const bobsList = await (await call(bob, "GET", "/addresses")).json();
      const bobIds = bobsList.addresses.map((a: { id: number; name: string }) => a.name);
      assert.ok(bobIds.includes("B1"));
      assert.ok(!bobIds.some((name: string) => name.startsWith("A")));
      assert.ok(bobs.length === 1);
    });

    await t.step("anonymous addresses (stored while auth was off) are no token's", async () => {
      // Auth is on: without a token there is no access at all.
      const res = await fetch(`${server.httpUrl}/addresses/${target.id}`);
      assert.equal(res.status, 401);
      await res.body?.cancel();
    });
  } finally {
    await server.close();
  }
});

Deno.test("owners: a v2 PUT tells nothing of other owners and never reuses an id: another owner's, a deleted and an allocated id answer alike", async () => {
  const server = await startTestServer({ GRPC_PORT: "off", AUTH_JWT_SECRET: SECRET });
  const as = async (sub: string) =>
    addressBook(server.httpUrl, bearer(await hsToken({ sub, scope: SCOPES })));
  const [alice, bob] = [await as("alice"), await as("bob")];
  const v2 = { "content-type": "application/vnd.books.v2+json" };
  const answer = async (res: Response) => {
    const body = await res.json();
    const id = Number(new URL(res.url).pathname.split("/").pop());
    return { status: res.status, body: JSON.stringify(body).replaceAll(String(id), "<id>") };
  };
  try {
    const ids: number[] = [];
    for (const name of ["B1", "B2", "B3"]) {
      ids.push((await (await bob.create(named(name))).json()).id);
    }
    const [live, deleted, last] = ids as [number, number, number];
    assert.equal((await bob.delete(deleted)).status, 204);
    const taken = await answer(await alice.put(live, named("Mallory"), v2));
    assert.equal(taken.status, 409);
    assert.match(taken.body, /"error":"id-taken"/);
    // Bob's deleted id, to alice and to bob himself: the same answer (never reused).
    assert.deepEqual(await answer(await alice.put(deleted, named("Mallory"), v2)), taken);
    assert.deepEqual(await answer(await bob.put(deleted, named("B2 again"), v2)), taken);
    // An id above every id handed out: created, and from then on taken for others alike.
    const fresh = last + 5_000;
    const created = await alice.put(fresh, named("Alice"), v2);
    assert.equal(created.status, 201);
    await created.body?.cancel();
    assert.deepEqual(await answer(await bob.put(fresh, named("Mallory"), v2)), taken);
    // Between the ids handed out and the one alice took: allocated, so taken too.
    assert.deepEqual(await answer(await bob.put(fresh - 1, named("Bob"), v2)), taken);
    // Bob's live address is his to replace; alice's is hers.
    assert.equal((await bob.put(live, named("B1 v2"), v2)).status, 200);
    assert.equal((await alice.put(fresh, named("Alice v2"), v2)).status, 200);
    assert.equal((await (await bob.get(live)).json()).name, "B1 v2");
  } finally {
    await server.close();
  }
});

Deno.test("owners: addresses stored while auth was off stay with the anonymous owner", async () => {
  const first = await startTestServer();
  const created = await addressBook(first.httpUrl).create({
    name: "Anon",
    city: "Bonn",
    postalCode: "53111",
  });
  const { id } = await created.json();
  await first.shutdown();
  const second = await startTestServer({ AUTH_JWT_SECRET: SECRET, KV_PATH: first.kvPath });
  try {
    const token = await hsToken({ sub: "alice", scope: SCOPES });
    const res = await fetch(`${second.httpUrl}/addresses/${id}`, { headers: bearer(token) });
    assert.equal(res.status, 404);
    await res.body?.cancel();
    const list = await (await fetch(`${second.httpUrl}/addresses`, { headers: bearer(token) }))
      .json();
    assert.deepEqual(list.addresses, []);
  } finally {
    await second.close();
    await first.close();
  }
});
