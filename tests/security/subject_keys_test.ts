/**
 * Owners are KV key parts, and Deno KV encodes a key string as UTF-8, replacing a lone surrogate
 * with U+FFFD: a `sub` that is not well-formed Unicode would share the owner index and the
 * Idempotency-Key records of another `sub`. Such a `sub` is refused (401) on every protocol, the
 * store refuses such an owner too, and the empty `sub` (the anonymous owner's key) is refused.
 */
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { AppError } from "../../lib/errors.ts";
import { openAddressStore } from "../../store/addresses/repository.ts";
import { addressBook, bearer, graphql, idempotencyKey } from "../support/requests.ts";
import {
  booksCode,
  connectTransport,
  grpcTransport,
  http2Session,
} from "../support/rpc_clients.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const ALL = "addresses:read addresses:write books:read";
const INVALID = 'Bearer realm="books", error="invalid_token"';
const ADDRESS = { name: "Ada", city: "London", postalCode: "NW1 6XE" };

Deno.test("a sub that is not well-formed Unicode is 401 invalid_token on every protocol", async () => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET, AUTH_BOOKS: "required" });
  try {
    for (const sub of ["\ud800", "\udfff", "a\udc00b", "\udfff\ud800", "x\ud83d"]) {
      const token = await hsToken({ sub, scope: ALL });
      const where = JSON.stringify(sub);
      for (const path of ["/addresses", "/rest/books", "/api/book/1"]) {
        const res = await fetch(`${server.httpUrl}${path}`, { headers: bearer(token) });
        const body = await res.json();
        assert.equal(res.status, 401, `${where} GET ${path}: ${JSON.stringify(body)}`);
        assert.equal(res.headers.get("www-authenticate"), INVALID);
        assert.equal(body.errors[0].error, "unauthorized");
        assert.match(body.errors[0].detail, /sub/);
      }
      const res = await graphql(server.httpUrl, { query: "{ books { title } }" }, bearer(token));
      const answer = await res.json();
      assert.equal(res.status, 401, `${where} GraphQL: ${JSON.stringify(answer)}`);
      assert.equal(answer.errors[0].extensions.code, "unauthorized");
      assert.equal(answer.data, undefined);
      const connect = connectTransport(server.httpUrl, "1.1");
      assert.equal(
        await booksCode(connect, bearer(token)),
        Code.Unauthenticated,
        `${where} Connect`,
      );
      // The gRPC listener runs in its own process, with its own verifier.
      using session = http2Session(server.grpcUrl!);
      const grpc = grpcTransport(server.grpcUrl!, session);
      assert.equal(await booksCode(grpc, bearer(token)), Code.Unauthenticated, `${where} gRPC`);
    }
    // U+FFFD itself is a well-formed sub like any other.
    const replacement = await hsToken({ sub: "\ufffd", scope: ALL });
    const ok = await fetch(`${server.httpUrl}/rest/books`, { headers: bearer(replacement) });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
  } finally {
    await server.close();
  }
});

Deno.test('subs "\\ud800" and "\\ufffd" share no owner index and no Idempotency-Key record', async () => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET });
  const url = `${server.httpUrl}/addresses`;
  const replacement = await hsToken({ sub: "\ufffd", scope: ALL });
  const lone = await hsToken({ sub: "\ud800", scope: ALL });
  const post = (token: string) =>
    addressBook(server.httpUrl, bearer(token)).create(ADDRESS, idempotencyKey("k-1"));
  try {
    const created = await post(replacement);
    assert.equal(created.status, 201);
    const address = await created.json();

    // The owner index of "\ufffd" is not listed for "\ud800".
    const list = await fetch(url, { headers: bearer(lone) });
    const listed = await list.text();
    assert.equal(list.status, 401, `"\\ud800" listed: ${listed}`);
    assert.ok(!listed.includes("London"));
    // Its Idempotency-Key record is not replayed to "\ud800" either.
    const replay = await post(lone);
    const replayed = await replay.text();
    assert.equal(replay.status, 401, `"\\ud800" replayed: ${replayed}`);
    assert.ok(!replayed.includes("London"));
    const read = await fetch(`${url}/${address.id}`, { headers: bearer(lone) });
    assert.equal(read.status, 401);
    await read.body?.cancel();

    // Nothing changed for the owner of U+FFFD.
    const own = await (await fetch(url, { headers: bearer(replacement) })).json();
    assert.deepEqual(own, { addresses: [address], nextCursor: null });
  } finally {
    await server.close();
  }
});

Deno.test("the store refuses an owner that UTF-8 cannot encode as itself", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = openAddressStore(kv);
  const created = await store.create("\ufffd", ADDRESS, "k-1");
  const refused = (e: unknown) => e instanceof AppError && e.code === "forbidden";
  await assert.rejects(store.create("\ud800", ADDRESS, "k-1"), refused);
  await assert.rejects(store.create("\ud800", ADDRESS), refused);
  await assert.rejects(store.list("\ud800", { limit: 10 }), refused);
  await assert.rejects(store.get("\ud800", created.address.id), refused);
  await assert.rejects(store.putAt("\udc00", 7, ADDRESS), refused);
  assert.deepEqual(
    (await store.list("\ufffd", { limit: 10 })).items.map((s) => s.address),
    [created.address],
  );
});

Deno.test("an empty sub is refused: no token reaches the anonymous owner's addresses", async () => {
  const open = await startTestServer();
  const created = await addressBook(open.httpUrl).create(ADDRESS, idempotencyKey("k-1"));
  assert.equal(created.status, 201);
  await created.body?.cancel();
  await open.shutdown();
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET, KV_PATH: open.kvPath });
  try {
    const empty = await hsToken({ sub: "", scope: ALL });
    for (const method of ["GET", "POST"]) {
      const res = await fetch(`${server.httpUrl}/addresses`, {
        method,
        headers: { ...bearer(empty), "content-type": "application/json", "idempotency-key": "k-1" },
        body: method === "POST" ? JSON.stringify(ADDRESS) : undefined,
      });
      const body = await res.json();
      assert.equal(res.status, 401, `${method}: ${JSON.stringify(body)}`);
      assert.equal(res.headers.get("www-authenticate"), INVALID);
      assert.match(body.errors[0].detail, /sub/);
    }
  } finally {
    await server.close();
    await open.close();
  }
});
