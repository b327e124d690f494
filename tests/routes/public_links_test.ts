/**
 * Links in bodies (`help`, problem `type` and `instance`) are relative, or built from
 * `PUBLIC_URL` when it is set; the request's `Host` (or an absolute-form target) is never echoed.
 * Requests are written on a raw socket (tests/support/raw_http.ts): fetch does not let a client
 * choose `Host`.
 */
import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "../../lib/config.ts";
import { rawHttp1, type RawResponse } from "../support/raw_http.ts";
import { startTestServer } from "../support/server.ts";

function assertNoHost(answer: RawResponse, where: string): void {
  const all = answer.body + [...answer.headers].map(([k, v]) => `${k}: ${v}`).join("\n");
  assert.ok(!all.includes("evil"), `${where} echoes the Host: ${all}`);
}

const EVIL = { host: "evil.example" };
const PROBLEM = { ...EVIL, accept: "application/problem+json" };
const ADDRESS = JSON.stringify({ name: "Ada", city: "London", postalCode: "NW1 6XE" });

Deno.test("links in bodies are relative without PUBLIC_URL; Host is never echoed", async () => {
  const server = await startTestServer();
  const url = server.httpUrl;
  try {
    const missing = await rawHttp1(url, { method: "GET", target: "/nope", headers: EVIL });
    assert.equal(missing.status, 404);
    assertNoHost(missing, "404");
    assert.equal(JSON.parse(missing.body).errors[0].help, "/docs/errors#route-not-found");

    const problem = await rawHttp1(url, { method: "GET", target: "/nope", headers: PROBLEM });
    assertNoHost(problem, "problem+json");
    const p = JSON.parse(problem.body);
    assert.equal(p.type, "/docs/errors#route-not-found");
    assert.equal(p.instance, `/nope#request-${problem.headers.get("x-request-id")}`);

    // An absolute-form target names a host too.
    const absolute = await rawHttp1(url, {
      method: "GET",
      target: "http://evil.example/api/book/999999",
      headers: EVIL,
    });
    assert.equal(absolute.status, 404);
    assertNoHost(absolute, "absolute-form");
    assert.equal(JSON.parse(absolute.body).errors[0].help, "/docs/errors#book-not-found");

    // An instance is never a network-path reference (`//host/…`).
    const doubled = await rawHttp1(url, {
      method: "GET",
      target: "//elsewhere.example/x",
      headers: PROBLEM,
    });
    assert.ok(doubled.status >= 400 && doubled.status < 500, doubled.body);
    assertNoHost(doubled, "//elsewhere.example/x");
    assert.match(JSON.parse(doubled.body).instance, /^\/(?!\/)/);

    const home = await rawHttp1(url, { method: "GET", target: "/", headers: EVIL });
    assert.equal(home.status, 200);
    assertNoHost(home, "GET /");
    for (const link of Object.values(JSON.parse(home.body)._links) as { href: string }[]) {
      assert.match(link.href, /^\/(?!\/)/);
    }

    const created = await rawHttp1(url, {
      method: "POST",
      target: "/addresses",
      headers: { ...EVIL, "content-type": "application/json" },
      body: ADDRESS,
    });
    assert.equal(created.status, 201);
    assertNoHost(created, "POST /addresses");
    assert.equal(created.headers.get("location"), `/addresses/${JSON.parse(created.body).id}`);

    const invalid = await rawHttp1(url, {
      method: "POST",
      target: "/addresses",
      headers: { ...EVIL, "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(invalid.status, 400);
    assertNoHost(invalid, "400");
    for (const e of JSON.parse(invalid.body).errors) {
      assert.equal(e.help, "/docs/errors#invalid-field");
    }
  } finally {
    await server.close();
  }
});

Deno.test("links in bodies are built from PUBLIC_URL when it is set", async () => {
  const server = await startTestServer({ PUBLIC_URL: "https://api.example.com/books/" });
  const url = server.httpUrl;
  try {
    const missing = await rawHttp1(url, { method: "GET", target: "/nope", headers: EVIL });
    assertNoHost(missing, "404");
    assert.equal(
      JSON.parse(missing.body).errors[0].help,
      "https://api.example.com/books/docs/errors#route-not-found",
    );
    const problem = await rawHttp1(url, {
      method: "GET",
      target: "/addresses/99999",
      headers: PROBLEM,
    });
    assert.equal(problem.status, 404);
    assertNoHost(problem, "problem+json");
    const p = JSON.parse(problem.body);
    assert.equal(p.type, "https://api.example.com/books/docs/errors#address-not-found");
    assert.equal(
      p.instance,
      `https://api.example.com/books/addresses/99999#request-${
        problem.headers.get("x-request-id")
      }`,
    );
    const doubled = await rawHttp1(url, {
      method: "GET",
      target: "//elsewhere.example/x",
      headers: PROBLEM,
    });
    assertNoHost(doubled, "//elsewhere.example/x");
    assert.match(JSON.parse(doubled.body).instance, /^https:\/\/api\.example\.com\/books\//);
  } finally {
    await server.close();
  }
});

Deno.test("PUBLIC_URL: an absolute http(s) URL without query, fragment or credentials", () => {
  const cases: [string, string | undefined][] = [
    ["https://api.example.com", "https://api.example.com"],
    ["https://api.example.com/", "https://api.example.com"],
    ["http://localhost:8000/books/", "http://localhost:8000/books"],
    ["https://API.example.com:443/v1", "https://api.example.com/v1"],
  ];
  for (const [value, publicUrl] of cases) {
    assert.equal(loadConfig({ PUBLIC_URL: value }).publicUrl, publicUrl, value);
  }
  assert.equal(loadConfig({}).publicUrl, undefined);
  for (
    const value of [
      "api.example.com",
      "/books",
      "ftp://api.example.com",
      "https://api.example.com/?a=1",
      "https://api.example.com/?",
      "https://api.example.com/#top",
      "https://user:secret@api.example.com",
      "javascript:alert(1)",
    ]
  ) {
    assert.throws(() => loadConfig({ PUBLIC_URL: value }), (error: Error) => {
      assert.ok(error instanceof ConfigError);
      assert.match(
        error.message,
        /^invalid PUBLIC_URL=".*": must be an absolute http\(s\) URL without query, fragment or credentials$/,
      );
      return true;
    }, value);
  }
});
