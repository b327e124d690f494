import assert from "node:assert/strict";
import {
  type AddressBook,
  addressBook,
  errorCode,
  MERGE_PATCH as MERGE,
  sendJson,
  V2,
} from "../support/requests.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

const ADA = { name: "Ada Lovelace", city: "London", postalCode: "W1J 7NT" };
const GRACE = { name: "Grace Hopper", city: "Arlington", postalCode: "22201" };
const MAX = Number.MAX_SAFE_INTEGER;

/** The address as stored, or the status of its read when there is none. */
async function stored(api: AddressBook, id: number): Promise<unknown> {
  const res = await api.get(id);
  return res.status === 200 ? await res.json() : res.status;
}

async function allIds(api: AddressBook): Promise<number[]> {
  return (await api.listAll()).map((a) => a.id);
}

/** Runs `fn` against a fresh server (no gRPC listener) and its anonymous address book. */
async function withServer(
  fn: (server: TestServer, api: AddressBook) => Promise<void>,
): Promise<void> {
  const server = await startTestServer({ GRPC_PORT: "off" });
  try {
    await fn(server, addressBook(server.httpUrl));
  } finally {
    await server.close();
  }
}

Deno.test("GET / links to every resource, and each link answers", async () => {
  await withServer(async ({ httpUrl: base }) => {
    const res = await fetch(`${base}/`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/json");
    assert.equal(res.headers.get("vary"), "Accept");
    const links = (await res.json())._links;
    assert.deepEqual(Object.keys(links).sort(), [
      "address",
      "addresses",
      "book",
      "books",
      "docs",
      "errors",
      "graphql",
      "graphqlSchema",
      "grpc",
      "openapi",
      "self",
    ]);
    assert.equal(links.book.href, "/api/book/{id}");
    assert.equal(links.book.templated, true);
    for (
      const name of ["self", "books", "addresses", "openapi", "docs", "errors", "graphqlSchema"]
    ) {
      const target = await fetch(`${base}${links[name].href}`);
      await target.body?.cancel();
      assert.equal(target.status, 200, name);
    }
    const book = await fetch(`${base}${links.book.href.replace("{id}", "1")}`);
    assert.equal((await book.json()).id, 1);
    const graphql = await sendJson(`${base}${links.graphql.href}`, "POST", {
      query: "{ books { title } }",
    });
    assert.equal(graphql.status, 200);
    assert.ok((await graphql.json()).data.books.length > 0);
    const grpc = await sendJson(`${base}${links.grpc.href}`, "POST", {});
    assert.equal(grpc.status, 200);
    assert.ok((await grpc.json()).book.length > 0);
    // The vendor types are echoed; another type is 406.
    const vendor = await fetch(`${base}/`, { headers: { accept: V2 } });
    await vendor.body?.cancel();
    assert.equal(vendor.headers.get("content-type"), V2);
    const xml = await fetch(`${base}/`, { headers: { accept: "application/xml" } });
    assert.equal(xml.status, 406);
    await xml.body?.cancel();
  });
});

Deno.test("version 2 PUT: created at the path id, replaced whole, idempotent", async (t) => {
  await withServer(async ({ httpUrl: base }, api) => {
    await t.step("absent id: 201 at that id, Location of the path, v2 type", async () => {
      const res = await api.put(40, ADA, { "content-type": V2 });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get("location"), "/addresses/40");
      assert.equal(res.headers.get("content-type"), V2);
      assert.equal(res.headers.get("vary"), "Accept");
      assert.match(res.headers.get("etag") ?? "", /^"[A-Za-z0-9_-]{22}"$/);
      assert.deepEqual(await res.json(), { id: 40, ...ADA });
      assert.deepEqual(await stored(api, 40), { id: 40, ...ADA });
    });
    await t.step("existing: replaced whole, name included (200)", async () => {
      const res = await api.put(40, GRACE, { "content-type": V2 });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("location"), null);
      assert.deepEqual(await res.json(), { id: 40, ...GRACE });
      assert.deepEqual(await stored(api, 40), { id: 40, ...GRACE });
    });
    await t.step("repeating leaves the same state", async () => {
      for (let i = 0; i < 3; i++) {
        const res = await api.put(40, GRACE, { "content-type": V2 });
        assert.equal(res.status, 200);
        await res.body?.cancel();
      }
      assert.deepEqual(await stored(api, 40), { id: 40, ...GRACE });
      assert.deepEqual(await allIds(api), [40]);
    });
    await t.step("v2 by Accept alone; the type in any case with parameters", async () => {
      const byAccept = await api.put(41, ADA, {
        "content-type": "application/json",
        "accept": V2,
      });
      assert.equal(byAccept.status, 201);
      assert.equal(byAccept.headers.get("content-type"), V2);
      assert.equal(byAccept.headers.get("location"), "/addresses/41");
      await byAccept.body?.cancel();
      const odd = await api.put(42, ADA, {
        "content-type": "Application/VND.Books.V2+JSON ; charset=UTF-8",
      });
      assert.equal(odd.status, 201);
      assert.deepEqual(await odd.json(), { id: 42, ...ADA });
    });
    await t.step("ids far above the counter, near 2^53 - 1: 409; past it: 400", async () => {
      // One PUT must not move the counter so far that POST has no id left to hand out.
      for (const id of [MAX, MAX - 1, 42 + 1_000_001]) {
        const res = await api.put(id, ADA, { "content-type": V2 });
        assert.equal(res.status, 409, String(id));
        assert.equal(await errorCode(res), "id-taken");
      }
      for (const id of [String(MAX + 1), "9007199254740993", "99999999999999999"]) {
        const res = await api.put(id, ADA, { "content-type": V2 });
        assert.equal(res.status, 400, id);
        assert.equal(await errorCode(res), "invalid-parameter");
      }
    });
    await t.step(
      "POST never hands out an id a PUT created; a PUT never takes one POST did",
      async () => {
        // The PUTs above moved the counter to 42: POST goes on above it.
        const ids = [];
        for (let i = 0; i < 3; i++) {
          const res = await api.create(GRACE);
          assert.equal(res.status, 201);
          ids.push((await res.json()).id);
        }
        assert.deepEqual(ids, [43, 44, 45]);
        // Below the counter, a deleted id (and one never used, 1) is taken: ids are never reused.
        assert.equal((await api.delete(44)).status, 204);
        for (const id of [44, 1]) {
          const res = await api.put(id, ADA, { "content-type": V2 });
          assert.equal(res.status, 409, String(id));
          assert.equal(await errorCode(res), "id-taken");
        }
        const above = await api.put(46, ADA, { "content-type": V2 });
        assert.equal(above.status, 201);
        await above.body?.cancel();
        const next = await api.create(GRACE);
        assert.equal((await next.json()).id, 47);
        assert.deepEqual(await allIds(api), [40, 41, 42, 43, 45, 46, 47]);
      },
    );
    await t.step("v2 If-Match: stale is 412, current replaces, on an absent id 412", async () => {
      const current = (await fetch(`${base}/addresses/40`)).headers.get("etag")!;
      const stale = await api.put(40, ADA, {
        "content-type": V2,
        "if-match": '"00000000000000010000"',
      });
      assert.equal(stale.status, 412);
      assert.equal(await errorCode(stale), "precondition-failed");
      const ok = await api.put(40, ADA, {
        "content-type": V2,
        "if-match": current,
      });
      assert.equal(ok.status, 200);
      await ok.body?.cancel();
      const absent = await api.put(77, ADA, {
        "content-type": V2,
        "if-match": "*",
      });
      assert.equal(absent.status, 412);
      await absent.body?.cancel();
      assert.equal(await stored(api, 77), 404);
    });
    await t.step("version 1 is unchanged: name kept, absent id gets a generated id", async () => {
      const existing = await api.put(40, GRACE);
      assert.equal(existing.status, 200);
      assert.equal(existing.headers.get("content-type"), "application/json");
      assert.deepEqual(await existing.json(), {
        id: 40,
        name: ADA.name,
        city: GRACE.city,
        postalCode: GRACE.postalCode,
      });
      const absent = await api.put(500, ADA, {
        "content-type": "application/vnd.books.v1+json",
      });
      assert.equal(absent.status, 201);
      const body = await absent.json();
      assert.equal(body.id, 48);
      assert.equal(absent.headers.get("location"), "/addresses/48");
      assert.equal(await stored(api, 500), 404);
    });
  });
});

Deno.test("another owner's address: not found, v1 PUT creates anew, v2 PUT is id-taken", async () => {
  await withServer(async ({ httpUrl: base, kvPath }, api) => {
    // An address of another owner, written as the store writes it (as if created with a token).
    const theirs = { id: 5, ...GRACE };
    {
      await using kv = await Deno.openKv(kvPath);
      await kv.atomic()
        .set(["addresses", 5], { owner: "bob", address: theirs })
        .set(["owner_addresses", "bob", 5], theirs)
        .commit();
    }
    assert.equal(await stored(api, 5), 404);
    assert.deepEqual(await allIds(api), []);
    const patch = await api.patch(5, { city: "X" });
    assert.equal(patch.status, 404);
    assert.equal(await errorCode(patch), "address-not-found");
    const del = await fetch(`${base}/addresses/5`, { method: "DELETE" });
    assert.equal(del.status, 404);
    await del.body?.cancel();
    const v2 = await api.put(5, ADA, { "content-type": V2 });
    assert.equal(v2.status, 409);
    assert.equal(await errorCode(v2), "id-taken");
    const v1 = await api.put(5, ADA);
    assert.equal(v1.status, 201);
    const created = await v1.json();
    assert.notEqual(created.id, 5);
    assert.deepEqual(await allIds(api), [created.id]);
    // Bob's address is untouched.
    await using kv = await Deno.openKv(kvPath);
    assert.deepEqual((await kv.get(["addresses", 5])).value, { owner: "bob", address: theirs });
    // And the JSON served never carries an owner.
    assert.deepEqual(Object.keys(created).sort(), ["city", "id", "name", "postalCode"]);
  });
});

Deno.test("PATCH with JSON Merge Patch", async (t) => {
  await withServer(async ({ httpUrl: base }, api) => {
    const created = await (await api.create(ADA)).json();
    const path = `/addresses/${created.id}`;
    const patch = (body: unknown, headers: Record<string, string> = {}) =>
      api.patch(created.id, body, headers);

    await t.step("only the members sent change; unknown members are ignored", async () => {
      const res = await patch({ city: "Paris", extra: 1 });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "application/json");
      assert.match(res.headers.get("etag") ?? "", /^"[A-Za-z0-9_-]{22}"$/);
      assert.deepEqual(await res.json(), { ...created, city: "Paris" });
      assert.deepEqual(await stored(api, created.id), { ...created, city: "Paris" });
    });
    await t.step("an empty patch changes nothing, ETag included", async () => {
      const before = (await fetch(`${base}${path}`)).headers.get("etag");
      const res = await patch({});
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("etag"), before);
      assert.deepEqual(await res.json(), { ...created, city: "Paris" });
    });
    await t.step("null for a required member, or a bad value: 400 invalid-field", async () => {
      for (const body of [{ name: null }, { postalCode: "§§" }, { city: "" }, { city: 5 }]) {
        const res = await patch(body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(await errorCode(res), "invalid-field");
      }
      const both = await patch({ name: null, city: null });
      assert.equal((await both.json()).errors.length, 2);
      assert.deepEqual(await stored(api, created.id), { ...created, city: "Paris" });
    });
    await t.step("not an object: 400 invalid-body", async () => {
      for (const body of ["[]", '"x"', "null", "{", ""]) {
        const res = await patch(body);
        assert.equal(res.status, 400, body);
        assert.equal(await errorCode(res), "invalid-body");
      }
    });
    await t.step("another content type: 415 with Accept-Patch, never 500", async () => {
      for (
        const type of [
          "application/json",
          V2,
          "text/plain",
          "application/merge-patch",
          "application/merge-patch+json;;;=",
          "",
        ]
      ) {
        const res = await api.patch(created.id, { city: "Rome" }, { "content-type": type });
        if (type === "application/merge-patch+json;;;=") {
          // The media type decides, parameters are not judged.
          assert.equal(res.status, 200, type);
          await res.body?.cancel();
          continue;
        }
        assert.equal(res.status, 415, type);
        assert.equal(res.headers.get("accept-patch"), MERGE);
        assert.equal(await errorCode(res), "unsupported-media-type");
      }
      // A body without any Content-Type.
      const none = await fetch(`${base}${path}`, {
        method: "PATCH",
        body: new Uint8Array([123, 125]),
      });
      assert.equal(none.status, 415);
      assert.equal(none.headers.get("accept-patch"), MERGE);
      await none.body?.cancel();
    });
    await t.step("If-Match: stale 412, current applies", async () => {
      const current = (await fetch(`${base}${path}`)).headers.get("etag")!;
      const stale = await patch({ city: "Oslo" }, { "if-match": '"00000000000000010000"' });
      assert.equal(stale.status, 412);
      assert.equal(await errorCode(stale), "precondition-failed");
      const ok = await patch({ city: "Oslo" }, { "if-match": current });
      assert.equal(ok.status, 200);
      assert.notEqual(ok.headers.get("etag"), current);
      assert.equal((await ok.json()).city, "Oslo");
      const star = await patch({ name: "Ada King" }, { "if-match": "*" });
      assert.equal((await star.json()).name, "Ada King");
    });
    await t.step("absent id 404, malformed id 400", async () => {
      const absent = await api.patch(999, { city: "X" });
      assert.equal(absent.status, 404);
      assert.equal(await errorCode(absent), "address-not-found");
      const bad = await api.patch("abc", { city: "X" });
      assert.equal(bad.status, 400);
      assert.equal(await errorCode(bad), "invalid-parameter");
    });
    await t.step("OPTIONS names PATCH and its format (Accept-Patch)", async () => {
      const res = await fetch(`${base}${path}`, { method: "OPTIONS" });
      assert.equal(res.status, 204);
      assert.equal(res.headers.get("allow"), "GET, HEAD, PUT, PATCH, DELETE, OPTIONS");
      assert.equal(res.headers.get("accept-patch"), MERGE);
      const collection = await fetch(`${base}/addresses`, { method: "OPTIONS" });
      assert.equal(collection.headers.get("accept-patch"), null);
    });
    await t.step("PATCH on the collection is 405", async () => {
      const res = await sendJson(`${base}/addresses`, "PATCH", {}, { "content-type": MERGE });
      assert.equal(res.status, 405);
      assert.match(res.headers.get("allow") ?? "", /POST/);
      await res.body?.cancel();
    });
  });
});

Deno.test("conditional reads: strong ETags and 304", async (t) => {
  await withServer(async ({ httpUrl: base }, api) => {
    await t.step(
      "an address: 304 while unchanged, 200 with a new ETag after a change",
      async () => {
        const created = await api.create(ADA);
        const etag = created.headers.get("etag")!;
        const id = (await created.json()).id;
        const first = await fetch(`${base}/addresses/${id}`);
        assert.equal(first.headers.get("etag"), etag);
        assert.equal(first.headers.get("cache-control"), "private, no-cache");
        await first.body?.cancel();
        for (const condition of [etag, `W/${etag}`, `"nope", ${etag}`, "*"]) {
          const res = await fetch(`${base}/addresses/${id}`, {
            headers: { "if-none-match": condition },
          });
          assert.equal(res.status, 304, condition);
          assert.equal(res.headers.get("etag"), etag);
          assert.equal(res.headers.get("cache-control"), "private, no-cache");
          assert.equal(res.headers.get("vary"), "Accept");
          assert.equal(await res.text(), "");
        }
        const changed = await api.patch(id, { city: "Bath" });
        const newEtag = changed.headers.get("etag");
        await changed.body?.cancel();
        const after = await fetch(`${base}/addresses/${id}`, {
          headers: { "if-none-match": etag },
        });
        assert.equal(after.status, 200);
        assert.equal(after.headers.get("etag"), newEtag);
        assert.equal((await after.json()).city, "Bath");
        const missing = await fetch(`${base}/addresses/9999`, {
          headers: { "if-none-match": "*" },
        });
        assert.equal(missing.status, 404);
        await missing.body?.cancel();
      },
    );
    await t.step("books: the list and each book, with Cache-Control", async () => {
      for (const path of ["/rest/books", "/api/book/1", "/api/book/32"]) {
        const first = await fetch(`${base}${path}`);
        const etag = first.headers.get("etag")!;
        assert.match(etag, /^"[A-Za-z0-9_-]{27}"$/);
        assert.equal(first.headers.get("cache-control"), "max-age=300");
        const body = await first.text();
        const again = await fetch(`${base}${path}`, { headers: { "if-none-match": etag } });
        assert.equal(again.status, 304, path);
        assert.equal(again.headers.get("etag"), etag);
        assert.equal(again.headers.get("cache-control"), "max-age=300");
        assert.equal(await again.text(), "");
        // Same bytes in another media type: the same validator.
        const v2 = await fetch(`${base}${path}`, { headers: { accept: V2 } });
        assert.equal(v2.headers.get("content-type"), V2);
        assert.equal(v2.headers.get("etag"), etag);
        assert.equal(await v2.text(), body);
        const other = await fetch(`${base}${path}`, { headers: { "if-none-match": '"x"' } });
        assert.equal(other.status, 200);
        await other.body?.cancel();
      }
      const one = await fetch(`${base}/api/book/1`);
      const two = await fetch(`${base}/api/book/2`);
      assert.notEqual(one.headers.get("etag"), two.headers.get("etag"));
      await one.body?.cancel();
      await two.body?.cancel();
    });
  });
});

Deno.test("If-Match compares strongly: a weak tag of the current version is 412 and changes nothing", async () => {
  await withServer(async ({ httpUrl: base }, api) => {
    const created = await api.create(ADA);
    const address = await created.json();
    const etag = created.headers.get("etag")!;
    const weak = `W/${etag}`;
    const writes: [string, () => Promise<Response>][] = [
      ["PUT v1", () => api.put(address.id, GRACE, { "if-match": weak })],
      ["PUT v2", () => api.put(address.id, GRACE, { "content-type": V2, "if-match": weak })],
      ["PATCH", () => api.patch(address.id, { city: "Bath" }, { "if-match": weak })],
      ["DELETE", () => api.delete(address.id, { "if-match": weak })],
      [
        "PATCH, weak among others",
        () => api.patch(address.id, { city: "Bath" }, { "if-match": `"nope", ${weak}` }),
      ],
    ];
    for (const [what, write] of writes) {
      const res = await write();
      assert.equal(res.status, 412, what);
      assert.equal(await errorCode(res), "precondition-failed", what);
      const now = await api.get(address.id);
      assert.equal(now.headers.get("etag"), etag, what);
      assert.deepEqual(await now.json(), address, what);
    }
    // If-None-Match compares weakly: the weak tag still matches.
    const read = await fetch(`${base}/addresses/${address.id}`, {
      headers: { "if-none-match": weak },
    });
    assert.equal(read.status, 304);
    await read.body?.cancel();
    // The strong tag itself still applies.
    const ok = await api.patch(address.id, { city: "Bath" }, { "if-match": etag });
    assert.equal(ok.status, 200);
    assert.equal((await ok.json()).city, "Bath");
  });
});

Deno.test("body types: POST and PUT take JSON and the vendor types, anything else 415", async () => {
  await withServer(async ({ httpUrl: base }, api) => {
    for (
      const type of [
        "application/json",
        "APPLICATION/JSON; charset=utf-8",
        "application/vnd.books.v1+json",
        "application/vnd.books.v2+json; q=1",
      ]
    ) {
      const res = await api.create(ADA, { "content-type": type });
      assert.equal(res.status, 201, type);
      await res.body?.cancel();
    }
    for (
      const type of [
        MERGE,
        "text/plain",
        "application/vnd.books.v3+json",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "json",
        "application/json/x",
      ]
    ) {
      for (const [method, path] of [["POST", "/addresses"], ["PUT", "/addresses/1"]]) {
        const res = await sendJson(`${base}${path}`, method!, ADA, { "content-type": type });
        assert.equal(res.status, 415, `${method} ${type}`);
        assert.equal(await errorCode(res), "unsupported-media-type");
      }
    }
  });
});

// Issue 10, defect 1 (found by hand): the JSON guard accepted these, the OpenAPI route's own
// media-type gate refused them with an HTTPException the edge rendered as 500.
const ACCEPTED_TYPES = [
  "application/json;;;",
  "application/json ; charset=utf-8",
  "application/json; charset",
  "application/json;charset=UTF-8;foo=bar",
  "APPLICATION/JSON",
  "Application/Json; Charset=utf-8",
  "application/json\t",
  "application/vnd.books.v1+json",
  "application/vnd.books.v1+json; charset=utf-8",
];

Deno.test("POST and PUT /addresses with odd JSON content types are written, never 500 (issue 10)", async () => {
  const server = await startTestServer();
  try {
    for (const type of ACCEPTED_TYPES) {
      const post = await fetch(`${server.httpUrl}/addresses`, {
        method: "POST",
        headers: { "content-type": type },
        body: JSON.stringify(ADA),
      });
      assert.equal(post.status, 201, `POST with ${JSON.stringify(type)}`);
      const created = await post.json();
      assert.equal(post.headers.get("location"), `/addresses/${created.id}`);
      const put = await fetch(`${server.httpUrl}/addresses/${created.id}`, {
        method: "PUT",
        headers: { "content-type": type },
        body: JSON.stringify({ ...ADA, city: "Paris" }),
      });
      assert.equal(put.status, 200, `PUT with ${JSON.stringify(type)}`);
      await put.body?.cancel();
      const stored = await (await fetch(`${server.httpUrl}/addresses/${created.id}`)).json();
      assert.deepEqual(stored, { ...ADA, id: created.id, city: "Paris" });
    }
  } finally {
    await server.close();
  }
});

Deno.test("POST /addresses with a non-JSON or unknown +json content type is 415, never 500", async () => {
  const server = await startTestServer();
  try {
    for (
      const type of [
        "application/foo+json",
        "application/vnd.books.v9+json",
        "text/json",
        "application/jsonx",
        "json",
        "application/",
        ";application/json",
        "text/plain; application/json",
      ]
    ) {
      const res = await fetch(`${server.httpUrl}/addresses`, {
        method: "POST",
        headers: { "content-type": type },
        body: JSON.stringify(ADA),
      });
      assert.equal(res.status, 415, `POST with ${JSON.stringify(type)}`);
      assert.equal(res.headers.get("content-type"), "application/json");
      const body = await res.json();
      assert.equal(body.errors[0].error, "unsupported-media-type");
    }
    const list = await (await fetch(`${server.httpUrl}/addresses`)).json();
    assert.deepEqual(list.addresses, []);
  } finally {
    await server.close();
  }
});

Deno.test("the OpenAPI document covers v2, PATCH, conditional and idempotency headers, errors", async () => {
  await withServer(async ({ httpUrl: base }) => {
    const doc = await (await fetch(`${base}/openapi.json`)).json();
    const op = (path: string, method: string) => doc.paths[path][method];
    const headerNames = (o: { parameters?: { in: string; name: string }[] }) =>
      (o.parameters ?? []).filter((p) => p.in === "header").map((p) => p.name);

    const put = op("/addresses/{id}", "put");
    assert.ok(put.requestBody.content[V2], "v2 body type");
    assert.ok(put.responses["201"].content[V2], "v2 answer type");
    assert.match(put.description, /RFC 9110/);
    assert.deepEqual(Object.keys(put.responses).sort(), [
      "200",
      "201",
      "400",
      "401",
      "403",
      "406",
      "409",
      "412",
      "413",
      "415",
      "429",
      "503",
    ]);
    assert.deepEqual(headerNames(put), ["if-match", "if-none-match"]);
    assert.match(
      put.parameters.find((p: { name: string }) => p.name === "if-none-match").description,
      /create/,
    );

    const patch = op("/addresses/{id}", "patch");
    assert.deepEqual(Object.keys(patch.requestBody.content), [MERGE]);
    assert.ok(patch.responses["415"].headers["Accept-Patch"]);
    assert.deepEqual(headerNames(patch), ["if-match", "if-none-match"]);
    assert.deepEqual(headerNames(op("/addresses/{id}", "delete")), ["if-match", "if-none-match"]);
    assert.deepEqual(headerNames(op("/addresses", "delete")), ["if-match", "if-none-match"]);

    const post = op("/addresses", "post");
    assert.deepEqual(headerNames(post), ["idempotency-key", "if-match", "if-none-match"]);
    for (const status of ["201", "400", "409", "412", "413", "415", "422", "503"]) {
      assert.ok(post.responses[status], `POST ${status}`);
    }
    assert.ok(post.responses["201"].headers.Location);
    assert.ok(post.responses["201"].headers.ETag);

    for (
      const [path, method] of [["/addresses/{id}", "get"], ["/rest/books", "get"], [
        "/api/book/{id}",
        "get",
      ]]
    ) {
      const read = op(path!, method!);
      assert.deepEqual(headerNames(read), ["if-none-match"], path!);
      assert.ok(read.responses["304"], `${path} 304`);
      assert.ok(read.responses["200"].headers.ETag, `${path} ETag`);
    }
    assert.ok(op("/", "get"), "the entry point");
    // Every error answer documents the detailed error body and RFC 7807.
    for (const operations of Object.values(doc.paths) as Record<string, unknown>[]) {
      for (const operation of Object.values(operations) as { responses: object }[]) {
        for (const [status, entry] of Object.entries(operation.responses)) {
          if (Number(status) < 400) continue;
          // Answers shared by many operations are references to `components.responses`.
          const ref = (entry as { $ref?: string }).$ref;
          const response = ref === undefined
            ? entry
            : doc.components.responses[ref.split("/").at(-1)!];
          const content = (response as { content?: object }).content;
          assert.ok(content?.["application/json" as never]);
          assert.ok(content?.["application/problem+json" as never]);
        }
      }
    }
  });
});
