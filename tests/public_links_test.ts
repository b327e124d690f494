/**
 * Links in bodies (`help`, problem `type` and `instance`) are relative, or built from
 * `PUBLIC_URL` when it is set; the request's `Host` (or an absolute-form target) is never echoed.
 * Requests are written on a raw socket, since fetch does not let a client choose `Host`.
 */
import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "../lib/config.ts";
import { startTestServer } from "./support/server.ts";

interface RawAnswer {
  status: number;
  headers: Headers;
  text: string;
}

/** Sends one HTTP/1.1 request as written and reads the answer until the server closes. */
async function raw(
  baseUrl: string,
  head: string,
  headers: Record<string, string>,
  body = "",
): Promise<RawAnswer> {
  const { hostname, port } = new URL(baseUrl);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  const lines = [head, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  if (body) lines.push(`content-length: ${new TextEncoder().encode(body).byteLength}`);
  lines.push("connection: close", "", body);
  await conn.write(new TextEncoder().encode(lines.join("\r\n")));
  let text = "";
  const decoder = new TextDecoder();
  for await (const chunk of conn.readable) text += decoder.decode(chunk, { stream: true });
  const [top = "", ...rest] = text.split("\r\n\r\n");
  const [statusLine = "", ...headerLines] = top.split("\r\n");
  const parsed = new Headers();
  for (const line of headerLines) {
    const at = line.indexOf(":");
    parsed.append(line.slice(0, at), line.slice(at + 1).trim());
  }
  return { status: Number(statusLine.split(" ")[1]), headers: parsed, text: rest.join("\r\n\r\n") };
}

function assertNoHost(answer: RawAnswer, where: string): void {
  const all = answer.text + [...answer.headers].map(([k, v]) => `${k}: ${v}`).join("\n");
  assert.ok(!all.includes("evil"), `${where} echoes the Host: ${all}`);
}

const EVIL = { host: "evil.example" };
const PROBLEM = { ...EVIL, accept: "application/problem+json" };
const ADDRESS = JSON.stringify({ name: "Ada", city: "London", postalCode: "NW1 6XE" });

Deno.test("links in bodies are relative without PUBLIC_URL; Host is never echoed", async () => {
  const server = await startTestServer();
  const url = server.httpUrl;
  try {
    const missing = await raw(url, "GET /nope HTTP/1.1", EVIL);
    assert.equal(missing.status, 404);
    assertNoHost(missing, "404");
    assert.equal(JSON.parse(missing.text).errors[0].help, "/docs/errors#route-not-found");

    const problem = await raw(url, "GET /nope HTTP/1.1", PROBLEM);
    assertNoHost(problem, "problem+json");
    const p = JSON.parse(problem.text);
    assert.equal(p.type, "/docs/errors#route-not-found");
    assert.equal(p.instance, `/nope#request-${problem.headers.get("x-request-id")}`);

    // An absolute-form target names a host too.
    const absolute = await raw(url, "GET http://evil.example/api/book/999999 HTTP/1.1", EVIL);
    assert.equal(absolute.status, 404);
    assertNoHost(absolute, "absolute-form");
    assert.equal(JSON.parse(absolute.text).errors[0].help, "/docs/errors#book-not-found");

    // An instance is never a network-path reference (`//host/…`).
    const doubled = await raw(url, "GET //elsewhere.example/x HTTP/1.1", PROBLEM);
    assert.ok(doubled.status >= 400 && doubled.status < 500, doubled.text);
    assertNoHost(doubled, "//elsewhere.example/x");
    assert.match(JSON.parse(doubled.text).instance, /^\/(?!\/)/);

    const home = await raw(url, "GET / HTTP/1.1", EVIL);
    assert.equal(home.status, 200);
    assertNoHost(home, "GET /");
    for (const link of Object.values(JSON.parse(home.text)._links) as { href: string }[]) {
      assert.match(link.href, /^\/(?!\/)/);
    }

    const created = await raw(url, "POST /addresses HTTP/1.1", {
      ...EVIL,
      "content-type": "application/json",
    }, ADDRESS);
    assert.equal(created.status, 201);
    assertNoHost(created, "POST /addresses");
    assert.equal(created.headers.get("location"), `/addresses/${JSON.parse(created.text).id}`);

    const invalid = await raw(url, "POST /addresses HTTP/1.1", {
      ...EVIL,
      "content-type": "application/json",
    }, "{}");
    assert.equal(invalid.status, 400);
    assertNoHost(invalid, "400");
    for (const e of JSON.parse(invalid.text).errors) {
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
    const missing = await raw(url, "GET /nope HTTP/1.1", EVIL);
    assertNoHost(missing, "404");
    assert.equal(
      JSON.parse(missing.text).errors[0].help,
      "https://api.example.com/books/docs/errors#route-not-found",
    );
    const problem = await raw(url, "GET /addresses/99999 HTTP/1.1", PROBLEM);
    assert.equal(problem.status, 404);
    assertNoHost(problem, "problem+json");
    const p = JSON.parse(problem.text);
    assert.equal(p.type, "https://api.example.com/books/docs/errors#address-not-found");
    assert.equal(
      p.instance,
      `https://api.example.com/books/addresses/99999#request-${
        problem.headers.get("x-request-id")
      }`,
    );
    const doubled = await raw(url, "GET //elsewhere.example/x HTTP/1.1", PROBLEM);
    assertNoHost(doubled, "//elsewhere.example/x");
    assert.match(JSON.parse(doubled.text).instance, /^https:\/\/api\.example\.com\/books\//);
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
