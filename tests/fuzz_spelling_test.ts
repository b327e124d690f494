/**
 * Property-based fuzzing of how the server reads a request target (design.md, "One request, one
 * view"): other spellings of every routed path (tests/support/fuzz_http.ts `pathSpelling`),
 * sent verbatim over HTTP/1.1 and h2c to a server with authentication on, `AUTH_BOOKS=required`
 * and CORS. Whatever the spelling:
 * - a request without a valid token (or with one that grants no scope) gets a 2xx only on the
 *   public list, spelled exactly as routed;
 * - no answer is a 405 whose `Allow` lists the request's own method;
 * - no answer is a 5xx.
 * On the gRPC listener, a call to a spelling of a service path without a token never succeeds
 * unless it is a public service spelled exactly.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { fuzz } from "./support/fuzz.ts";
import { pathSpelling } from "./support/fuzz_http.ts";
import { h2c, rawHttp1, type RawRequest, type RawResponse } from "./support/raw_http.ts";
import { startTestServer } from "./support/server.ts";
import { hsToken, SECRET } from "./support/tokens.ts";

// The design's public list, spelled as routed: one segment of plain characters after the
// asset prefixes, never a dot segment.
const PUBLIC =
  /^\/(?:|healthz|readyz|openapi\.json|docs|docs\/errors|graphql|(?:docs|graphql)\/assets\/(?!\.\.?$)[A-Za-z0-9._-]+)$/;

function pathOf(target: string): string {
  const query = target.indexOf("?");
  return query === -1 ? target : target.slice(0, query);
}

/** What reaches the server over HTTP/2: its stack drops a fragment before any handler runs. */
function overHttp2(target: string): string {
  return target.split("#")[0] || "/";
}

const ADDRESS = JSON.stringify({ name: "Ada", city: "London", postalCode: "W1J 7NT" });
const BODIES: [string, string][] = [
  ["application/json", ADDRESS],
  ["application/merge-patch+json", '{"city":"Paris"}'],
  ["application/json", JSON.stringify({ query: "{ books { title } }" })],
  ["application/json", "{}"],
];

const spelledRequest = fc.record({
  method: fc.constantFrom("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"),
  target: pathSpelling(),
  body: fc.constantFrom(...BODIES),
  token: fc.constantFrom("none", "none", "scopeless"),
});

Deno.test("spelling fuzz: no spelling of a path gets past the gate, a self-refusing 405 or a 5xx", async () => {
  const server = await startTestServer({
    AUTH_JWT_SECRET: SECRET,
    AUTH_BOOKS: "required",
    CORS_ORIGINS: "https://app.example",
  });
  const scopeless = `Bearer ${await hsToken({ sub: "mallory", scope: "" })}`;
  const h2 = h2c(server.httpUrl);
  const seen: Record<string, number> = {};
  try {
    await fuzz("spelling", 300, spelledRequest, async (c) => {
      const headers: Record<string, string> = {};
      if (c.token === "scopeless") headers.authorization = scopeless;
      const request: RawRequest = { method: c.method, target: c.target, headers };
      if (c.method !== "GET" && c.method !== "HEAD" && c.method !== "OPTIONS") {
        headers["content-type"] = c.body[0];
        request.body = c.body[1];
      }
      const answers: [string, string, RawResponse][] = [
        ["HTTP/1.1", c.target, await rawHttp1(server.httpUrl, request)],
        ["h2c", overHttp2(c.target), await h2.request(request)],
      ];
      for (const [transport, target, res] of answers) {
        const where = `${transport} ${c.method} ${c.target} (${c.token} token) -> ${res.status}`;
        seen[res.status] = (seen[res.status] ?? 0) + 1;
        assert.ok(res.status < 500, `${where}: ${res.body.slice(0, 300)}`);
        if (res.status >= 200 && res.status < 300) {
          const optionsOnly = c.token === "scopeless" && c.method === "OPTIONS";
          assert.ok(
            PUBLIC.test(pathOf(target)) || optionsOnly,
            `${where}: a success outside the public list`,
          );
        }
        if (res.status === 405) {
          const allow = (res.headers.get("allow") ?? "").split(/,\s*/);
          assert.ok(!allow.includes(c.method), `${where}: 405 with Allow ${allow}`);
        }
      }
    });
    console.log(`spelling answers: ${JSON.stringify(seen)}`);
    assert.ok((seen["400"] ?? 0) > 0 && (seen["401"] ?? 0) > 0, "the spellings were not varied");
    assert.deepEqual(server.logs.filter((l) => l.msg === "unhandled error"), []);
  } finally {
    h2.close();
    await server.close();
  }
});

const GRPC_PATHS = [
  "/books.v1.BooksService/books",
  "/grpc.health.v1.Health/Check",
  "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
] as const;
const GRPC_PUBLIC = new Set<string>([
  "/grpc.health.v1.Health/Check",
  "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
]);

Deno.test("spelling fuzz: the gRPC listener serves only exact spellings of public services without a token", async () => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET, AUTH_BOOKS: "required" });
  const client = h2c(server.grpcUrl!);
  const seen: Record<string, number> = {};
  try {
    await fuzz("grpc spelling", 200, pathSpelling(GRPC_PATHS), async (target) => {
      let res: RawResponse;
      try {
        res = await client.request({
          method: "POST",
          target,
          headers: { "content-type": "application/grpc", te: "trailers" },
          body: new Uint8Array(5), // one empty message
        });
      } catch (error) {
        // The HTTP/2 layer refused the stream (a `:path` it will not carry): nothing answered.
        seen["stream error"] = (seen["stream error"] ?? 0) + 1;
        assert.match(String(error), /NGHTTP2|HTTP2|stream|session|EPIPE|ECONNRESET/i);
        return;
      }
      const status = res.headers.get("grpc-status");
      const where = `${target} -> HTTP ${res.status}, grpc-status ${status}`;
      seen[status ?? `http ${res.status}`] = (seen[status ?? `http ${res.status}`] ?? 0) + 1;
      assert.ok(res.status < 500, where);
      if (status === "0") {
        assert.ok(GRPC_PUBLIC.has(pathOf(target)), `${where}: served without a token`);
      }
    });
    console.log(`gRPC spelling answers: ${JSON.stringify(seen)}`);
    assert.ok((seen["16"] ?? 0) > 0 && (seen["3"] ?? 0) > 0, "the spellings were not varied");
  } finally {
    client.close();
    await server.close();
  }
});
