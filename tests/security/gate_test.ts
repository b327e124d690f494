/**
 * The one gate runs for every route of every protocol on both ports: with AUTH_BOOKS=required
 * every books and address path is refused without a token (and with the wrong scope), and with
 * RATE_LIMIT every path is limited; probes are the only exception.
 */
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { bearer, connectJson, graphql } from "../support/requests.ts";
import {
  booksCode,
  everyTransport,
  type GrpcJsClient,
  grpcJsClient,
  grpcJsUnary,
} from "../support/rpc_clients.ts";
import { startTestServer, type TestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";
import { serveMain } from "../support/served.ts";

const PUBLIC = new Set([
  "/",
  "/healthz",
  "/readyz",
  "/openapi.json",
  "/docs",
  "/docs/errors",
]);

/** A native gRPC call with grpc-js (the listener's lean unary path): its status code and metadata. */
function grpcJsCall(client: GrpcJsClient, token: string | undefined) {
  return grpcJsUnary(client, "books", {}, bearer(token));
}

/** Every REST route the OpenAPI document lists, with ids filled in. */
async function restRoutes(server: TestServer, seen: Headers[] = []): Promise<[string, string][]> {
  const res = await fetch(`${server.httpUrl}/openapi.json`);
  seen.push(res.headers);
  const doc = await res.json() as {
    paths: Record<string, Record<string, unknown>>;
  };
  const routes: [string, string][] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const method of Object.keys(methods)) {
      routes.push([method.toUpperCase(), path.replace(/\{[^}]+\}/g, "1")]);
    }
  }
  return routes;
}

const BOOKS_QUERY = { query: "{ books { title } }" };

Deno.test("AUTH_BOOKS=required: every route of every protocol on both ports passes the gate", async (t) => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET, AUTH_BOOKS: "required" });
  const grpcClient = grpcJsClient(server.grpcUrl!);
  const reader = await hsToken({ sub: "reader", scope: "books:read" });
  const other = await hsToken({ sub: "other", scope: "addresses:read addresses:write" });
  try {
    // The GraphQL answer is cached first, so the refused call would be a cache hit in front of
    // the router if the gate let it through.
    assert.equal((await graphql(server.httpUrl, BOOKS_QUERY, bearer(reader))).status, 200);

    await t.step("every REST route in the OpenAPI document", async () => {
      const routes = await restRoutes(server);
      assert.ok(routes.length >= 8, JSON.stringify(routes));
      for (const [method, path] of routes) {
        const res = await fetch(`${server.httpUrl}${path}`, {
          method,
          headers: { "content-type": "application/json" },
          body: method === "GET" || method === "HEAD" || method === "DELETE" ? undefined : "{}",
        });
        await res.body?.cancel();
        if (PUBLIC.has(path)) {
          assert.notEqual(res.status, 401, `${method} ${path}`);
          continue;
        }
        assert.equal(res.status, 401, `${method} ${path}`);
        assert.equal(res.headers.get("www-authenticate"), 'Bearer realm="books"');
      }
    });

    await t.step("REST books with the wrong scope: 403; with books:read: 200", async () => {
      for (const path of ["/rest/books", "/api/book/1"]) {
        for (const method of ["GET", "HEAD"]) {
          const refused = await fetch(`${server.httpUrl}${path}`, {
            method,
            headers: bearer(other),
          });
          await refused.body?.cancel();
          assert.equal(refused.status, 403, `${method} ${path}`);
          assert.equal(
            refused.headers.get("www-authenticate"),
            'Bearer error="insufficient_scope", scope="books:read"',
          );
          const ok = await fetch(`${server.httpUrl}${path}`, { method, headers: bearer(reader) });
          await ok.body?.cancel();
          assert.equal(ok.status, 200, `${method} ${path}`);
        }
      }
    });

    await t.step("GraphQL: 401 and 403 with extensions.code, cached answer not given", async () => {
      const none = await graphql(server.httpUrl, BOOKS_QUERY);
      assert.equal(none.status, 401);
      assert.equal(none.headers.get("www-authenticate"), 'Bearer realm="books"');
      const body = await none.json();
      assert.equal(body.errors[0].extensions.code, "unauthorized");
      assert.equal(body.data, undefined);
      const wrong = await graphql(server.httpUrl, BOOKS_QUERY, bearer(other));
      assert.equal(wrong.status, 403);
      assert.equal((await wrong.json()).errors[0].extensions.code, "forbidden");
      // GraphiQL (a page, no data) stays reachable.
      const page = await fetch(`${server.httpUrl}/graphql`, { headers: { accept: "text/html" } });
      assert.equal(page.status, 200);
      assert.equal(page.headers.get("x-content-type-options"), "nosniff");
      assert.equal(page.headers.get("referrer-policy"), "no-referrer");
      assert.match(page.headers.get("content-security-policy") ?? "", /default-src 'self'/);
      await page.body?.cancel();
    });

    await t.step("Connect GET on the HTTP port: Connect's unauthenticated error", async () => {
      const res = await fetch(
        `${server.httpUrl}/books.v1.BooksService/books?connect=v1&encoding=json&message=%7B%7D`,
      );
      assert.equal(res.status, 401);
      assert.equal((await res.json()).code, "unauthenticated");
    });

    for (const [name, transport] of everyTransport(server)) {
      await t.step(`${name}: UNAUTHENTICATED, PERMISSION_DENIED, then OK`, async () => {
        assert.deepEqual(
          [
            await booksCode(transport),
            await booksCode(transport, bearer("garbage")),
            await booksCode(transport, bearer(other)),
            await booksCode(transport, bearer(reader)),
          ],
          [Code.Unauthenticated, Code.Unauthenticated, Code.PermissionDenied, 0],
        );
      });
    }

    await t.step("native gRPC with grpc-js (the listener's lean unary path)", async () => {
      assert.equal((await grpcJsCall(grpcClient, undefined)).code, grpc.status.UNAUTHENTICATED);
      assert.equal((await grpcJsCall(grpcClient, other)).code, grpc.status.PERMISSION_DENIED);
      assert.equal((await grpcJsCall(grpcClient, reader)).code, grpc.status.OK);
    });

    await t.step("probes and the gRPC health check are never gated", async () => {
      for (const path of ["/healthz", "/readyz"]) {
        const res = await fetch(`${server.httpUrl}${path}`);
        await res.body?.cancel();
        assert.equal(res.status, 200);
      }
    });
  } finally {
    await server.close();
  }
  // Both processes' logs (the gRPC child's lines pass through the same logger).
  const logs = JSON.stringify(server.logs);
  assert.ok(server.logs.some((l) => l.msg === "rpc" && l.code === "Unauthenticated"));
  for (const secret of [SECRET, reader, other]) assert.ok(!logs.includes(secret));
});

Deno.test("RATE_LIMIT: every route of every protocol on both ports is limited", async (t) => {
  // One request per hour: the first call of a client is allowed, every later one refused.
  const server = await startTestServer({ RATE_LIMIT: "1/h" });
  const grpcClient = grpcJsClient(server.grpcUrl!);
  try {
    // The route list is the first call: allowed, with the RateLimit headers.
    let routes: [string, string][] = [];
    await t.step("HTTP port: the first call is allowed with RateLimit headers", async () => {
      const headers: Headers[] = [];
      routes = await restRoutes(server, headers);
      assert.equal(headers[0]!.get("ratelimit-policy"), '"default";q=1;w=3600');
      assert.equal(headers[0]!.get("ratelimit"), '"default";r=0;t=3600');
    });

    await t.step("HTTP port: every REST route is then 429 with Retry-After", async () => {
      for (const [method, path] of routes) {
        const res = await fetch(`${server.httpUrl}${path}`, {
          method,
          headers: { "content-type": "application/json" },
          body: method === "GET" || method === "HEAD" || method === "DELETE" ? undefined : "{}",
        });
        const text = await res.text();
        if (path === "/healthz" || path === "/readyz") {
          assert.equal(res.status, 200, path);
          continue;
        }
        assert.equal(res.status, 429, `${method} ${path}`);
        assert.equal(res.headers.get("retry-after"), "3600");
        assert.equal(res.headers.get("ratelimit"), '"default";r=0;t=3600');
        assert.equal(res.headers.get("ratelimit-policy"), '"default";q=1;w=3600');
        if (method !== "HEAD") assert.equal(JSON.parse(text).errors[0].error, "rate-limited");
      }
    });

    await t.step("HTTP port: GraphQL 429 with extensions.code", async () => {
      const res = await graphql(server.httpUrl, BOOKS_QUERY);
      assert.equal(res.status, 429);
      assert.equal(res.headers.get("retry-after"), "3600");
      assert.equal((await res.json()).errors[0].extensions.code, "rate-limited");
    });

    await t.step("gRPC port: the first call is allowed, then RESOURCE_EXHAUSTED", async () => {
      // The gRPC listener is its own process with its own buckets (docs: per process).
      const first = await grpcJsCall(grpcClient, undefined);
      assert.equal(first.code, grpc.status.OK);
      assert.equal(first.metadata?.get("ratelimit")[0], '"default";r=0;t=3600');
      const second = await grpcJsCall(grpcClient, undefined);
      assert.equal(second.code, grpc.status.RESOURCE_EXHAUSTED);
      assert.equal(second.metadata?.get("retry-after")[0], "3600");
    });

    for (const [name, transport] of everyTransport(server)) {
      await t.step(`${name}: RESOURCE_EXHAUSTED`, async () => {
        assert.equal(await booksCode(transport), Code.ResourceExhausted);
      });
    }
  } finally {
    await server.close();
  }
});

Deno.test("deno serve (single port, least privilege): the same gate in front of every answer", async () => {
  const server = await serveMain({
    permissions: ["--allow-net", "--allow-env", "--allow-read"],
    env: {
      KV_PATH: ":memory:",
      AUTH_JWT_SECRET: SECRET,
      AUTH_BOOKS: "required",
      RATE_LIMIT: "100/s",
    },
  });
  const reader = await hsToken({ sub: "reader", scope: "books:read addresses:read" });
  try {
    for (const path of ["/rest/books", "/api/book/1", "/addresses"]) {
      const refused = await fetch(`${server.baseUrl}${path}`);
      await refused.body?.cancel();
      assert.equal(refused.status, 401, path);
      assert.ok(refused.headers.get("ratelimit"), path);
      const ok = await fetch(`${server.baseUrl}${path}`, { headers: bearer(reader) });
      await ok.body?.cancel();
      assert.equal(ok.status, 200, path);
    }
    const rpc = await connectJson(server.baseUrl);
    assert.equal(rpc.status, 401);
    assert.equal((await rpc.json()).code, "unauthenticated");
    assert.equal((await graphql(server.baseUrl, BOOKS_QUERY)).status, 401);
    assert.ok(!server.output().includes(reader));
  } finally {
    await server.stop();
  }
});

Deno.test("gRPC listener over TLS: HTTP/1.1 Connect calls (no HTTP/2 stream) pass the gate", async () => {
  const testdata = (name: string) =>
    new URL(`../../rpc/testdata/${name}`, import.meta.url).pathname;
  const server = await startTestServer({
    GRPC_TLS_CERT: testdata("localhost.crt"),
    GRPC_TLS_KEY: testdata("localhost.key"),
    AUTH_JWT_SECRET: SECRET,
    AUTH_BOOKS: "required",
    RATE_LIMIT: "100/s",
  });
  const client = Deno.createHttpClient({
    caCerts: [await Deno.readTextFile(testdata("ca.crt"))],
    http2: false,
  });
  const call = (token?: string) =>
    fetch(`${server.grpcUrl}/books.v1.BooksService/books`, {
      method: "POST",
      headers: { "content-type": "application/json", ...bearer(token) },
      body: "{}",
      client,
    });
  try {
    const refused = await call();
    assert.equal(refused.status, 401);
    assert.equal((await refused.json()).code, "unauthenticated");
    const ok = await call(await hsToken({ sub: "tls", scope: "books:read" }));
    assert.equal(ok.status, 200);
    assert.match(ok.headers.get("ratelimit") ?? "", /^"default";r=[0-9]+;t=[0-9]+$/);
    assert.ok((await ok.json()).book.length >= 25);
  } finally {
    client.close();
    await server.close();
  }
});
