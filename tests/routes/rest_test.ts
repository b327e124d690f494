import assert from "node:assert/strict";
import { waitForLine } from "../support/logs.ts";
import { addressBook } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";

const ADA = { name: "Ada Lovelace", city: "London", postalCode: "W1J 7NT" };
const shipped = JSON.parse(
  await Deno.readTextFile(new URL("../../store/books.json", import.meta.url)),
) as { id: number; author: object }[];

Deno.test("REST over a socket", async (t) => {
  const server = await startTestServer();
  const base = server.httpUrl;
  const api = addressBook(base);
  try {
    await t.step("GET /rest/books: every shipped book, ascending id", async () => {
      const res = await fetch(`${base}/rest/books`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "application/json");
      assert.match(res.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
      const books = await res.json();
      assert.ok(books.length >= 25);
      assert.deepEqual(books, shipped.toSorted((a, b) => a.id - b.id));
      for (const b of books) {
        assert.deepEqual(Object.keys(b).sort(), ["author", "id", "title", "year"]);
        assert.deepEqual(Object.keys(b.author).sort(), ["firstName", "lastName"]);
      }
    });

    await t.step("media type versioning echoes the vendor type and varies on Accept", async () => {
      const res = await fetch(`${base}/rest/books`, {
        headers: { accept: "application/vnd.books.v1+json" },
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "application/vnd.books.v1+json");
      assert.equal(res.headers.get("vary"), "Accept");
      await res.body?.cancel();
      const xml = await fetch(`${base}/rest/books`, { headers: { accept: "application/xml" } });
      assert.equal(xml.status, 406);
      assert.equal((await xml.json()).errors[0].error, "not-acceptable");
    });

    await t.step("GET /api/book/{id}: the book, 404 book-not-found, 400 for bad ids", async () => {
      const res = await fetch(`${base}/api/book/3`, { headers: { accept: "application/json" } });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), shipped.find((b) => b.id === 3));
      const missing = await fetch(`${base}/api/book/99999`);
      assert.equal(missing.status, 404);
      const body = await missing.json();
      assert.equal(body.errors.length, 1);
      assert.equal(body.errors[0].error, "book-not-found");
      assert.equal(body.errors[0].help, "/docs/errors#book-not-found");
      assert.equal(typeof body.errors[0].message, "string");
      assert.match(body.errors[0].detail, /99999/);
    });

    let ada: { id: number };
    let adaEtag: string;
    await t.step("POST /addresses: 201, Location, ETag, the stored address", async () => {
      const res = await api.create({ ...ADA, ignored: true });
      assert.equal(res.status, 201);
      ada = await res.json();
      assert.deepEqual(ada, { id: ada.id, ...ADA });
      assert.ok(Number.isSafeInteger(ada.id) && ada.id > 0);
      assert.equal(res.headers.get("location"), `/addresses/${ada.id}`);
      adaEtag = res.headers.get("etag")!;
      assert.match(adaEtag, /^"[A-Za-z0-9_-]{22}"$/);
      const again = await api.create(ADA);
      assert.equal(again.status, 201);
      assert.notEqual((await again.json()).id, ada.id, "every POST creates a new address");
    });

    await t.step("POST trims fields", async () => {
      const res = await api.create({
        name: "  Bo ",
        city: " Oslo",
        postalCode: "0150 ",
      });
      assert.equal(res.status, 201);
      const body = await res.json();
      assert.deepEqual([body.name, body.city, body.postalCode], ["Bo", "Oslo", "0150"]);
    });

    await t.step("GET /addresses/{id}: 200 with ETag; 404 address-not-found", async () => {
      const res = await fetch(`${base}/addresses/${ada.id}`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("etag"), adaEtag);
      assert.deepEqual(await res.json(), { id: ada.id, ...ADA });
      const missing = await fetch(`${base}/addresses/424242`);
      assert.equal(missing.status, 404);
      assert.equal((await missing.json()).errors[0].error, "address-not-found");
    });

    await t.step("PUT existing: 200, city and postalCode replaced, name kept", async () => {
      const res = await api.put(ada.id, {
        name: "Someone Else",
        city: "Paris",
        postalCode: "75001",
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("location"), null);
      const body = await res.json();
      assert.deepEqual(body, { id: ada.id, name: ADA.name, city: "Paris", postalCode: "75001" });
      const stored = await (await fetch(`${base}/addresses/${ada.id}`)).json();
      assert.deepEqual(stored, body);
      assert.notEqual(res.headers.get("etag"), adaEtag);
    });

    await t.step("PUT absent: 201, stored under a generated id, Location of that id", async () => {
      const res = await api.put(900000, ADA);
      assert.equal(res.status, 201);
      const body = await res.json();
      assert.notEqual(body.id, 900000);
      assert.equal(res.headers.get("location"), `/addresses/${body.id}`);
      assert.deepEqual(await (await fetch(`${base}/addresses/${body.id}`)).json(), body);
      assert.equal((await fetch(`${base}/addresses/900000`)).status, 404);
    });

    await t.step("If-Match: stale ETag is 412 and nothing changes", async () => {
      const res = await api.put(ada.id, { ...ADA, city: "Rome" }, {
        "if-match": adaEtag,
      });
      assert.equal(res.status, 412);
      assert.equal((await res.json()).errors[0].error, "precondition-failed");
      const stored = await (await fetch(`${base}/addresses/${ada.id}`)).json();
      assert.equal(stored.city, "Paris");
    });

    await t.step("GET /addresses pages by ascending id with nextCursor", async () => {
      for (let i = 0; i < 5; i++) {
        await (await api.create({ ...ADA, name: `p${i}` })).body?.cancel();
      }
      const ids: number[] = [];
      let url: string | null = `${base}/addresses?limit=2`;
      while (url) {
        const res: Response = await fetch(url);
        assert.equal(res.status, 200);
        const page = await res.json();
        assert.ok(page.addresses.length <= 2);
        ids.push(...page.addresses.map((a: { id: number }) => a.id));
        url = page.nextCursor === null
          ? null
          : `${base}/addresses?limit=2&cursor=${encodeURIComponent(page.nextCursor)}`;
      }
      assert.deepEqual(ids, ids.toSorted((a, b) => a - b));
      const all = await (await fetch(`${base}/addresses`)).json();
      assert.deepEqual(all.addresses.map((a: { id: number }) => a.id), ids);
      assert.equal(all.nextCursor, null);
    });

    await t.step("DELETE: 204, then 404; the id is not reused", async () => {
      const res = await fetch(`${base}/addresses/${ada.id}`, { method: "DELETE" });
      assert.equal(res.status, 204);
      assert.equal(await res.text(), "");
      assert.equal((await fetch(`${base}/addresses/${ada.id}`)).status, 404);
      const again = await fetch(`${base}/addresses/${ada.id}`, { method: "DELETE" });
      assert.equal(again.status, 404);
      await again.body?.cancel();
      const next = await (await api.create(ADA)).json();
      assert.ok(next.id > ada.id);
    });

    await t.step("probes, OpenAPI document and error docs", async () => {
      assert.deepEqual(await (await fetch(`${base}/healthz`)).json(), { status: "ok" });
      const ready = await fetch(`${base}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: "ready" });
      const doc = await (await fetch(`${base}/openapi.json`)).json();
      assert.equal(doc.openapi, "3.1.0");
      for (const path of ["/rest/books", "/api/book/{id}", "/addresses", "/addresses/{id}"]) {
        assert.ok(doc.paths[path], path);
      }
      assert.deepEqual(Object.keys(doc.paths["/addresses/{id}"]).sort(), [
        "delete",
        "get",
        "patch",
        "put",
      ]);
      assert.ok(doc.components.schemas.AddressInput);
      const docs = await fetch(`${base}/docs/errors`);
      assert.equal(docs.status, 200);
      assert.match(await docs.text(), /id="book-not-found"/);
    });

    await t.step(
      "every request is access-logged as one JSON line with its request id",
      async () => {
        const res = await fetch(`${base}/api/book/1`, {
          headers: { "x-request-id": "trace-abc.1" },
        });
        await res.body?.cancel();
        assert.equal(res.headers.get("x-request-id"), "trace-abc.1");
        const line = await waitForLine(() => server.logs, (l) => l.requestId === "trace-abc.1");
        assert.equal(line.msg, "request");
        assert.equal(line.method, "GET");
        assert.equal(line.path, "/api/book/1");
        assert.equal(line.status, 200);
        assert.equal(typeof line.durationMs, "number");
        const bad = await fetch(`${base}/healthz`, {
          headers: { "x-request-id": "no spaces <allowed>" },
        });
        await bad.body?.cancel();
        assert.match(bad.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
      },
    );
  } finally {
    await server.close();
  }
});
