/**
 * Property-based fuzzing of how the server reads a request target (docs/security.md, "One
 * request, one view"): other spellings of every routed path (tests/support/fuzz_http.ts
 * `pathSpelling`), sent verbatim over HTTP/1.1 and h2c to a server with authentication on,
 * `AUTH_BOOKS=required` and CORS. Whatever the spelling:
 * - a request without a valid token (or with one that grants no scope) gets a 2xx only on the
 *   public list, spelled exactly as routed;
 * - no answer is a 405 whose `Allow` lists the request's own method;
 * - no answer is a 5xx.
 * On the gRPC listener, a call to a spelling of a service path without a token never succeeds
 * unless it is a public service spelled exactly. Raw forms no client library sends (no leading
 * slash, `*`, absolute form, a bare `?` or `#`) are among the targets. And a client past its
 * rate limit gets 429 (RESOURCE_EXHAUSTED) whatever it spells, whatever the method and token,
 * but for the probes' own GET and HEAD (the gRPC health check's POST).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { fuzz } from "../support/fuzz.ts";
import { method, pathSpelling, rawTargetForm } from "../support/fuzz_http.ts";
import { h2c, rawHttp1, type RawRequest, type RawResponse } from "../support/raw_http.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

// The public list (docs/security.md), spelled as routed: one segment of plain characters after the
// asset prefixes, never a dot segment.
const PUBLIC =
  /^\/(?:|healthz|readyz|openapi\.json|docs|docs\/errors|graphql|(?:docs|graphql)\/assets\/(?!\.\.?$)[A-Za-z0-9._-]+)$/;

function pathOf(target: string): string {
  const query = target.indexOf("?");
  return query === -1 ? target : target.slice(0, query);
}

/**
 * The target the HTTP port's handler sees of an h2c `:path`: Deno.serve drops a fragment and puts
 * a `/` before a path without one before any handler runs, and keeps nothing of the raw value
 * (docs/security.md, "HTTP/2 on the HTTP port"). So on h2c the invariants hold for the target
 * as rewritten; the raw forms themselves are refused exactly over HTTP/1.1 and on the gRPC port.
 */
function overHttp2(target: string): string {
  const kept = target.split("#")[0]!;
  return kept.startsWith("/") || kept.startsWith("*") ? kept : `/${kept}`;
}

const ADDRESS = JSON.stringify({ name: "Ada", city: "London", postalCode: "W1J 7NT" });
const BODIES: [string, string][] = [
  ["application/json", ADDRESS],
  ["application/merge-patch+json", '{"city":"Paris"}'],
  ["application/json", JSON.stringify({ query: "{ books { title } }" })],
  ["application/json", "{}"],
];

/** Other spellings of routed paths, and now and then a raw form no client library sends. */
const target = fc.oneof(
  { weight: 5, arbitrary: pathSpelling() },
  { weight: 1, arbitrary: rawTargetForm() },
);

const spelledRequest = fc.record({
  method: fc.constantFrom("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"),
  target,
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
    const grpcTarget = fc.oneof(
      { weight: 4, arbitrary: pathSpelling(GRPC_PATHS) },
      { weight: 1, arbitrary: rawTargetForm(GRPC_PATHS) },
    );
    await fuzz("grpc spelling", 200, grpcTarget, async (target) => {
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

const PROBES = new Set(["/healthz", "/readyz"]);
const HEALTH_CHECK = new Set(["/grpc.health.v1.Health/Check"]);

/** Whether `target` names one of `paths` as routed (a query aside; a fragment is a spelling). */
function isExactly(paths: ReadonlySet<string>, target: string): boolean {
  return !target.includes("#") && paths.has(pathOf(target));
}

Deno.test("spelling fuzz: a client past its rate limit gets 429 whatever it spells and whatever the method, the probes' GET and HEAD aside", async () => {
  // One request an hour per client: each spends it first, then every request is over.
  const server = await startTestServer({ RATE_LIMIT: "1/h", AUTH_JWT_SECRET: SECRET });
  const h2 = h2c(server.httpUrl);
  const grpc = h2c(server.grpcUrl!);
  const spent = `Bearer ${await hsToken({ sub: "spent", scope: "addresses:read" })}`;
  const seen: Record<string, number> = {};
  try {
    // On each listener: a token not seen before is paid for by the address, its next request by
    // its `sub`; then both buckets are empty.
    for (let i = 0; i < 2; i++) {
      const headers = { authorization: spent };
      const first = await rawHttp1(server.httpUrl, {
        method: "GET",
        target: "/addresses",
        headers,
      });
      assert.equal(first.status, 200, first.body);
      const call = await grpc.request({
        method: "POST",
        target: "/books.v1.BooksService/books",
        headers: { "content-type": "application/grpc", te: "trailers", ...headers },
        body: new Uint8Array(5),
      });
      assert.equal(call.headers.get("grpc-status"), "0");
    }
    const limited = fc.record({
      method,
      target,
      grpcTarget: fc.oneof(
        { weight: 4, arbitrary: pathSpelling(GRPC_PATHS) },
        { weight: 1, arbitrary: rawTargetForm(GRPC_PATHS) },
      ),
      grpcMethod: fc.constantFrom("POST", "POST", "GET", "PUT", "FOO"),
      token: fc.constantFrom("none", "garbage", "spent"),
    });
    await fuzz("rate-limited spelling", 200, limited, async (c) => {
      const authorization = { none: undefined, garbage: "Bearer a.b.c", spent }[c.token];
      const headers: Record<string, string> = authorization ? { authorization } : {};
      const request: RawRequest = { method: c.method, target: c.target, headers };
      const answers: [string, string, RawResponse][] = [
        ["HTTP/1.1", c.target, await rawHttp1(server.httpUrl, request)],
        ["h2c", overHttp2(c.target), await h2.request(request)],
      ];
      for (const [transport, target, res] of answers) {
        const where = `${transport} ${c.method} ${c.target} (${c.token}) -> ${res.status}`;
        seen[res.status] = (seen[res.status] ?? 0) + 1;
        if ((c.method === "GET" || c.method === "HEAD") && isExactly(PROBES, target)) {
          assert.equal(res.status, 200, where);
        } else if (res.status === 400 && !res.headers.has("x-request-id")) {
          // Refused by Deno's HTTP/1.1 parser: the server never saw it (docs/security.md).
          assert.equal(transport, "HTTP/1.1", where);
        } else {
          assert.equal(res.status, 429, `${where}: ${res.body.slice(0, 200)}`);
        }
      }
      let res: RawResponse;
      try {
        res = await grpc.request({
          method: c.grpcMethod,
          target: c.grpcTarget,
          headers: { "content-type": "application/grpc", te: "trailers", ...headers },
          body: new Uint8Array(5),
        });
      } catch (error) {
        // The HTTP/2 layer refused the stream (a `:path` it will not carry): nothing answered.
        assert.match(String(error), /NGHTTP2|HTTP2|stream|session|EPIPE|ECONNRESET/i);
        return;
      }
      const where = `gRPC port ${c.grpcMethod} ${c.grpcTarget} (${c.token}) -> HTTP ${res.status}`;
      const status = res.headers.get("grpc-status");
      if (c.grpcMethod === "POST" && isExactly(HEALTH_CHECK, c.grpcTarget)) {
        assert.equal(status, "0", where);
      } else {
        assert.equal(status, "8", `${where}, grpc-status ${status}: ${res.body.slice(0, 200)}`);
      }
    });
    console.log(`rate-limited answers: ${JSON.stringify(seen)}`);
    assert.ok((seen["429"] ?? 0) > 0, "nothing was limited");
  } finally {
    h2.close();
    grpc.close();
    await server.close();
  }
});
