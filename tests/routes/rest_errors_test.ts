import assert from "node:assert/strict";
import { addressBook } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";

const VALID = { name: "Ada", city: "London", postalCode: "W1J 7NT" };
const JSON_TYPE = { "content-type": "application/json" };
const BAD_IDS = ["abc", "-1", "0", "1e40", "1.5", "0x10", "123456789012345678901234567890", "%20"];

interface Case {
  name: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: BodyInit;
  status: number;
  codes: string[];
}

const longText = (n: number) => "x".repeat(n);

const CASES: Case[] = [
  {
    name: "malformed JSON",
    method: "POST",
    path: "/addresses",
    headers: JSON_TYPE,
    body: '{"name":',
    status: 400,
    codes: ["invalid-body"],
  },
  {
    name: "empty body",
    method: "POST",
    path: "/addresses",
    headers: JSON_TYPE,
    body: "",
    status: 400,
    codes: ["invalid-body"],
  },
  {
    name: "JSON array",
    method: "POST",
    path: "/addresses",
    headers: JSON_TYPE,
    body: "[]",
    status: 400,
    codes: ["invalid-body"],
  },
  {
    name: "JSON string",
    method: "POST",
    path: "/addresses",
    headers: JSON_TYPE,
    body: '"hi"',
    status: 400,
    codes: ["invalid-body"],
  },
  {
    name: "JSON null",
    method: "POST",
    path: "/addresses",
    headers: JSON_TYPE,
    body: "null",
    status: 400,
    codes: ["invalid-body"],
  },
  {
    name: "invalid UTF-8",
    method: "POST",
    path: "/addresses",
    headers: JSON_TYPE,
    body: new Uint8Array([0x7b, 0xff, 0x7d]),
    status: 400,
    codes: ["invalid-body"],
  },
  {
    name: "all fields missing",
    method: "POST",
    path: "/addresses",
    headers: JSON_TYPE,
    body: "{}",
    status: 400,
    codes: ["invalid-field", "invalid-field", "invalid-field"],
  },
  {
    name: "wrong types",
    method: "POST",
    path: "/addresses",
    headers: JSON_TYPE,
    body: JSON.stringify({ name: 1, city: [], postalCode: null }),
    status: 400,
    codes: ["invalid-field", "invalid-field", "invalid-field"],
  },
  {
    name: "blank name",
    method: "POST",
    path: "/addresses",
    headers: JSON_TYPE,
    body: JSON.stringify({ ...VALID, name: "   " }),
    status: 400,
    codes: ["invalid-field"],
  },
  {
    name: "name too long",
    method: "POST",
    path: "/addresses",
    headers: JSON_TYPE,
    body: JSON.stringify({ ...VALID, name: longText(201) }),
    status: 400,
    codes: ["invalid-field"],
  },
  {
    name: "bad postal code",
    method: "POST",
    path: "/addresses",
    headers: JSON_TYPE,
    body: JSON.stringify({ ...VALID, postalCode: "<script>" }),
    status: 400,
    codes: ["invalid-field"],
  },
  {
    name: "postal code too long",
    method: "POST",
    path: "/addresses",
    headers: JSON_TYPE,
    body: JSON.stringify({ ...VALID, postalCode: "1".repeat(21) }),
    status: 400,
    codes: ["invalid-field"],
  },
  {
    name: "no content type",
    method: "POST",
    path: "/addresses",
    body: JSON.stringify(VALID),
    status: 415,
    codes: ["unsupported-media-type"],
  },
  {
    name: "text/plain",
    method: "POST",
    path: "/addresses",
    headers: { "content-type": "text/plain" },
    body: JSON.stringify(VALID),
    status: 415,
    codes: ["unsupported-media-type"],
  },
  {
    name: "form content type",
    method: "PUT",
    path: "/addresses/1",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "name=a",
    status: 415,
    codes: ["unsupported-media-type"],
  },
  {
    name: "oversized body",
    method: "POST",
    path: "/addresses",
    headers: JSON_TYPE,
    body: JSON.stringify({ ...VALID, pad: longText(70_000) }),
    status: 413,
    codes: ["payload-too-large"],
  },
  {
    name: "oversized streamed body",
    method: "POST",
    path: "/addresses",
    headers: JSON_TYPE,
    body: ReadableStream.from([new TextEncoder().encode(`{"pad":"${longText(70_000)}"}`)]),
    status: 413,
    codes: ["payload-too-large"],
  },
  {
    name: "PUT malformed JSON",
    method: "PUT",
    path: "/addresses/1",
    headers: JSON_TYPE,
    body: "{",
    status: 400,
    codes: ["invalid-body"],
  },
  {
    name: "PUT missing field",
    method: "PUT",
    path: "/addresses/1",
    headers: JSON_TYPE,
    body: JSON.stringify({ name: "a", city: "b" }),
    status: 400,
    codes: ["invalid-field"],
  },
  {
    name: "bad limit",
    method: "GET",
    path: "/addresses?limit=0",
    status: 400,
    codes: ["invalid-parameter"],
  },
  {
    name: "limit too large",
    method: "GET",
    path: "/addresses?limit=501",
    status: 400,
    codes: ["invalid-parameter"],
  },
  {
    name: "limit not a number",
    method: "GET",
    path: "/addresses?limit=ten",
    status: 400,
    codes: ["invalid-parameter"],
  },
  {
    name: "forged cursor",
    method: "GET",
    path: "/addresses?cursor=bm9wZQ",
    status: 400,
    codes: ["invalid-parameter"],
  },
  { name: "unknown route", method: "GET", path: "/nope", status: 404, codes: ["route-not-found"] },
  {
    name: "PATCH address with application/json",
    method: "PATCH",
    path: "/addresses/1",
    headers: JSON_TYPE,
    body: "{}",
    status: 415,
    codes: ["unsupported-media-type"],
  },
  {
    name: "DELETE books",
    method: "DELETE",
    path: "/rest/books",
    status: 405,
    codes: ["method-not-allowed"],
  },
  {
    name: "POST book",
    method: "POST",
    path: "/api/book/1",
    headers: JSON_TYPE,
    body: "{}",
    status: 405,
    codes: ["method-not-allowed"],
  },
  ...BAD_IDS.flatMap((id): Case[] => [
    {
      name: `book id ${id}`,
      method: "GET",
      path: `/api/book/${id}`,
      status: 400,
      codes: ["invalid-parameter"],
    },
    {
      name: `address id ${id}`,
      method: "GET",
      path: `/addresses/${id}`,
      status: 400,
      codes: ["invalid-parameter"],
    },
    {
      name: `PUT address id ${id}`,
      method: "PUT",
      path: `/addresses/${id}`,
      headers: JSON_TYPE,
      body: JSON.stringify(VALID),
      status: 400,
      codes: ["invalid-parameter"],
    },
    {
      name: `DELETE address id ${id}`,
      method: "DELETE",
      path: `/addresses/${id}`,
      status: 400,
      codes: ["invalid-parameter"],
    },
  ]),
];

Deno.test("bad input: the right status and code, nothing stored, server unharmed", async (t) => {
  const server = await startTestServer();
  const base = server.httpUrl;
  try {
    const api = addressBook(base);
    const seed = await api.create(VALID);
    assert.equal(seed.status, 201);
    const stored = await seed.json();

    for (const c of CASES) {
      await t.step(`${c.method} ${c.path.slice(0, 40)} (${c.name}) → ${c.status}`, async () => {
        const init: RequestInit = { method: c.method, headers: c.headers ?? {} };
        if (c.body !== undefined) init.body = c.body;
        const res = await fetch(`${base}${c.path}`, init);
        assert.equal(res.status, c.status);
        assert.equal(res.headers.get("content-type"), "application/json");
        assert.ok(res.headers.get("x-request-id"));
        const body = await res.json();
        assert.deepEqual(body.errors.map((e: { error: string }) => e.error), c.codes);
        for (const e of body.errors) {
          assert.equal(typeof e.message, "string");
          assert.equal(typeof e.detail, "string");
          assert.ok(e.detail.length > 0);
          assert.equal(e.help, `/docs/errors#${e.error}`);
        }
        if (c.status === 405) {
          assert.match(res.headers.get("allow") ?? "", /GET/);
        }
      });
    }

    await t.step("field errors name every field", async () => {
      const res = await api.create("{}");
      const details = (await res.json()).errors.map((e: { detail: string }) => e.detail).join(" ");
      for (const field of ["name", "city", "postalCode"]) {
        assert.match(details, new RegExp(`"${field}"`));
      }
    });

    await t.step("nothing was stored and the stored address is unchanged", async () => {
      const page = await (await fetch(`${base}/addresses`)).json();
      assert.deepEqual(page.addresses, [stored]);
      const next = await api.create(VALID);
      assert.equal((await next.json()).id, stored.id + 1, "failed writes consumed no id");
    });

    await t.step("German messages by Accept-Language; detail stays English", async () => {
      const res = await fetch(`${base}/api/book/0`, {
        headers: { "accept-language": "fr;q=0.9, de-CH;q=0.8, en;q=0.5" },
      });
      assert.equal(res.headers.get("content-language"), "de");
      const [e] = (await res.json()).errors;
      assert.equal(e.message, "Ein Parameter der Anfrage ist ungültig.");
      assert.match(e.detail, /must be a positive integer/);
    });

    await t.step("RFC 7807 when application/problem+json is accepted", async () => {
      const res = await fetch(`${base}/addresses/99999`, {
        headers: { accept: "application/problem+json" },
      });
      assert.equal(res.status, 404);
      assert.equal(res.headers.get("content-type"), "application/problem+json");
      const p = await res.json();
      assert.equal(p.type, "/docs/errors#address-not-found");
      assert.equal(p.status, 404);
      assert.equal(typeof p.title, "string");
      assert.match(p.detail, /99999/);
      assert.equal(p.instance, `/addresses/99999#request-${res.headers.get("x-request-id")}`);
    });

    await t.step("OPTIONS lists the allowed methods", async () => {
      const res = await fetch(`${base}/addresses`, { method: "OPTIONS" });
      assert.equal(res.status, 204);
      assert.equal(res.headers.get("allow"), "GET, HEAD, POST, DELETE, OPTIONS");
    });

    await t.step("HEAD works where GET does", async () => {
      const res = await fetch(`${base}/rest/books`, { method: "HEAD" });
      assert.equal(res.status, 200);
      assert.equal(await res.text(), "");
    });

    await t.step("the server still answers", async () => {
      assert.equal((await fetch(`${base}/healthz`)).status, 200);
    });
  } finally {
    await server.close();
  }
});

// Issue 19 (found by the REST fuzz suite once every answer was checked against /openapi.json,
// seed 657196812): the RFC 7807 `instance` was built from the decoded path, so a request for
// `/addresses/é` answered an `instance` that is not a URI reference.
Deno.test("RFC 7807 instance is a URI reference for any request path", async () => {
  const server = await startTestServer();
  try {
    const cases: [string, string][] = [
      ["/addresses/%C3%A9", "/addresses/%C3%A9"],
      ["/addresses/a b", "/addresses/a%20b"],
      ["/addresses/a|b^c", "/addresses/a%7Cb%5Ec"],
      ["/addresses/100%zz", "/addresses/100%25zz"],
      ["/api/book/x%5B1%5D", "/api/book/x%5B1%5D"],
    ];
    for (const [path, instancePath] of cases) {
      const res = await fetch(`${server.httpUrl}${path}`, {
        headers: { accept: "application/problem+json", "x-request-id": "r-1" },
      });
      assert.equal(res.status, 400, path);
      assert.equal(res.headers.get("content-type"), "application/problem+json");
      const problem = await res.json();
      assert.equal(problem.instance, `${instancePath}#request-r-1`, path);
    }
  } finally {
    await server.close();
  }
});
