/** CORS for browsers on every protocol of the HTTP port; secure headers on every answer. */
import assert from "node:assert/strict";
import { CORS_ALLOW_HEADERS, CORS_EXPOSE_HEADERS } from "../../server/cors.ts";
import { graphql } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";
import { SECRET } from "../support/tokens.ts";

const APP = "https://app.example.com";
const EVIL = "https://evil.example.com";

/** Paths a browser calls: REST, GraphQL, Connect and gRPC-Web. */
const PATHS: [string, string][] = [
  ["/addresses", "POST"],
  ["/addresses/1", "PUT"],
  ["/rest/books", "GET"],
  ["/api/book/1", "GET"],
  ["/graphql", "POST"],
  ["/books.v1.BooksService/books", "POST"],
];

function preflight(url: string, origin: string, method: string) {
  return fetch(url, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": method,
      "access-control-request-headers": "authorization, content-type, connect-protocol-version",
    },
  });
}

function corsHeaders(res: Response): string[] {
  return [...res.headers.keys()].filter((name) => name.startsWith("access-control-"));
}

Deno.test("CORS: preflights 204 for allowed origins, nothing for others, on every protocol", async (t) => {
  const server = await startTestServer({
    CORS_ORIGINS: `${APP}, http://localhost:5173`,
    AUTH_JWT_SECRET: SECRET,
    RATE_LIMIT: "1000/s",
  });
  try {
    await t.step("allowed origin: 204 with the documented headers", async () => {
      for (const [path, method] of PATHS) {
        const res = await preflight(`${server.httpUrl}${path}`, APP, method);
        await res.body?.cancel();
        assert.equal(res.status, 204, path);
        assert.equal(res.headers.get("access-control-allow-origin"), APP);
        assert.deepEqual(
          res.headers.get("access-control-allow-headers")?.split(","),
          CORS_ALLOW_HEADERS,
        );
        assert.match(res.headers.get("access-control-allow-methods") ?? "", new RegExp(method));
        assert.equal(res.headers.get("access-control-max-age"), "600");
        assert.match(res.headers.get("vary") ?? "", /Origin/);
        assert.equal(res.headers.get("x-content-type-options"), "nosniff");
      }
    });

    await t.step("other origin: no CORS header at all", async () => {
      for (const [path, method] of PATHS) {
        const res = await preflight(`${server.httpUrl}${path}`, EVIL, method);
        await res.body?.cancel();
        assert.deepEqual(corsHeaders(res), [], path);
        const call = await fetch(`${server.httpUrl}${path}`, { headers: { origin: EVIL } });
        await call.body?.cancel();
        assert.deepEqual(corsHeaders(call), [], path);
      }
    });

    await t.step("allowed origin: the answers carry the headers, refusals too", async () => {
      const books = await fetch(`${server.httpUrl}/rest/books`, { headers: { origin: APP } });
      await books.body?.cancel();
      assert.equal(books.status, 200);
      assert.equal(books.headers.get("access-control-allow-origin"), APP);
      assert.deepEqual(
        books.headers.get("access-control-expose-headers")?.split(","),
        CORS_EXPOSE_HEADERS,
      );
      assert.ok(books.headers.get("ratelimit"));
      const refused = await fetch(`${server.httpUrl}/addresses`, { headers: { origin: APP } });
      await refused.body?.cancel();
      assert.equal(refused.status, 401);
      assert.equal(refused.headers.get("access-control-allow-origin"), APP);
      const query = await graphql(server.httpUrl, '{"query":"{books{title}}"}', {
        origin: APP,
        authorization: "Bearer x",
      });
      assert.equal(query.status, 401);
      assert.equal(query.headers.get("access-control-allow-origin"), APP);
      assert.equal((await query.json()).errors[0].extensions.code, "unauthorized");
      const grpcWeb = await fetch(`${server.httpUrl}/books.v1.BooksService/books`, {
        method: "POST",
        headers: { origin: APP, "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
        body: new Uint8Array(5),
      });
      await grpcWeb.body?.cancel();
      assert.equal(grpcWeb.status, 200);
      assert.equal(grpcWeb.headers.get("access-control-allow-origin"), APP);
      assert.equal(grpcWeb.headers.get("grpc-status"), null); // status in the trailer frame
    });
  } finally {
    await server.close();
  }
});

Deno.test("CORS: 429 answers carry the headers; * allows any origin", async () => {
  const server = await startTestServer({ CORS_ORIGINS: "*", RATE_LIMIT: "1/h" });
  try {
    const first = await fetch(`${server.httpUrl}/rest/books`, { headers: { origin: EVIL } });
    await first.body?.cancel();
    assert.equal(first.headers.get("access-control-allow-origin"), "*");
    const limited = await fetch(`${server.httpUrl}/rest/books`, { headers: { origin: EVIL } });
    await limited.body?.cancel();
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get("access-control-allow-origin"), "*");
    assert.equal(limited.headers.get("retry-after"), "3600");
    assert.equal(limited.headers.get("x-content-type-options"), "nosniff");
  } finally {
    await server.close();
  }
});

Deno.test("nosniff on every answer with everything off, front answers included", async () => {
  const server = await startTestServer();
  try {
    for (
      const [path, init] of [
        ["/rest/books", {}],
        ["/api/book/1", {}],
        ["/api/book/999999", {}],
        ["/nope", {}],
        ["/graphql", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"query":"{books{title}}"}',
        }],
        ["/graphql", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"query":"{books{title}}"}',
        }],
        ["/healthz", {}],
        ["/openapi.json", {}],
      ] as [string, RequestInit][]
    ) {
      const res = await fetch(`${server.httpUrl}${path}`, init);
      await res.body?.cancel();
      assert.equal(res.headers.get("x-content-type-options"), "nosniff", path);
      assert.deepEqual(corsHeaders(res), [], path);
      assert.equal(res.headers.get("ratelimit"), null);
    }
    const doc = await (await fetch(`${server.httpUrl}/openapi.json`)).json();
    assert.deepEqual(doc.components.securitySchemes.bearerAuth.scheme, "bearer");
    const warn = server.logs.find((l) =>
      l.level === "warn" && /open to anyone/.test(String(l.msg))
    );
    assert.ok(warn, "start-up warns that the address book is open");
  } finally {
    await server.close();
  }
});
