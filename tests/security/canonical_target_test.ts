/**
 * One request, one view (docs/security.md): the vectors of the security audit, each over sockets
 * with its target sent verbatim, against a server with authentication on and `AUTH_BOOKS=required`.
 * Before the canonical target, each of these reached data without a token (or wrote without the
 * scope), because the gate read the raw path and the router a decoded one.
 */
import assert from "node:assert/strict";
import { h2c, rawHttp1, type RawRequest, type RawResponse } from "../support/raw_http.ts";
import { addressBook } from "../support/requests.ts";
import { startTestServer, type TestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const ADDRESS = JSON.stringify({ name: "Ada", city: "London", postalCode: "W1J 7NT" });

async function both(server: TestServer, request: RawRequest): Promise<RawResponse[]> {
  const client = h2c(server.httpUrl);
  try {
    return [await rawHttp1(server.httpUrl, request), await client.request(request)];
  } finally {
    client.close();
  }
}

async function addressCount(server: TestServer, auth: string): Promise<number> {
  return (await addressBook(server.httpUrl, { authorization: auth }).listAll()).length;
}

Deno.test("targets that are not canonical are refused before the gate and the router", async (t) => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET, AUTH_BOOKS: "required" });
  const owner = `Bearer ${await hsToken({ sub: "ada", scope: "addresses:read addresses:write" })}`;
  const readOnly = `Bearer ${await hsToken({ sub: "ada", scope: "addresses:read" })}`;
  try {
    const created = await addressBook(server.httpUrl, { authorization: owner }).create(ADDRESS);
    const id = (await created.json()).id;
    const before = await addressCount(server, owner);

    const refused: [string, RawRequest][] = [
      ["a percent-encoded letter, no token", { method: "GET", target: "/%61ddresses" }],
      [
        "a percent-encoded create, no token",
        {
          method: "POST",
          target: "/%61ddresses",
          headers: { "content-type": "application/json" },
          body: ADDRESS,
        },
      ],
      [
        "a percent-encoded patch with a read-only token",
        {
          method: "PATCH",
          target: `/%61ddresses/${id}`,
          headers: { authorization: readOnly, "content-type": "application/merge-patch+json" },
          body: '{"city":"Paris"}',
        },
      ],
      [
        "a percent-encoded delete with a read-only token",
        { method: "DELETE", target: `/%61ddresses/${id}`, headers: { authorization: readOnly } },
      ],
      ["books, encoded", { method: "GET", target: "/rest/%62ooks" }],
      ["one book, encoded", { method: "GET", target: "/api/%62ook/1" }],
      [
        "GraphQL, encoded",
        {
          method: "POST",
          target: "/gr%61phql",
          headers: { "content-type": "application/json" },
          body: '{"query":"{ books { title } }"}',
        },
      ],
      [
        "Connect, encoded",
        {
          method: "POST",
          target: "/%62ooks.v1.BooksService/books",
          headers: { "content-type": "application/json" },
          body: "{}",
        },
      ],
      ["a dot segment", { method: "GET", target: "/rest/./books" }],
      ["a parent segment", { method: "GET", target: "/docs/../addresses" }],
      ["an empty segment", { method: "GET", target: "/rest//books" }],
      ["a backslash", { method: "GET", target: "/rest\\books" }],
    ];
    for (const [name, request] of refused) {
      await t.step(name, async () => {
        for (const res of await both(server, request)) {
          assert.equal(res.status, 400, `${request.target}: ${res.body}`);
          assert.equal(JSON.parse(res.body).errors[0].error, "invalid-parameter");
          assert.match(res.headers.get("x-request-id") ?? "", /./);
        }
      });
    }

    await t.step("a fragment (HTTP/1.1 carries it to the server)", async () => {
      const res = await rawHttp1(server.httpUrl, {
        method: "POST",
        target: "/addresses#",
        headers: { "content-type": "application/json" },
        body: ADDRESS,
      });
      assert.equal(res.status, 400);
      assert.equal(JSON.parse(res.body).errors[0].error, "invalid-parameter");
    });

    await t.step("a Host that would move part of itself into the path", async () => {
      const res = await rawHttp1(server.httpUrl, {
        method: "GET",
        target: "/books",
        headers: { host: "x/rest" },
      });
      assert.equal(res.status, 400);
    });

    await t.step("nothing was written or changed", async () => {
      assert.equal(await addressCount(server, owner), before);
      const res = await fetch(`${server.httpUrl}/addresses/${id}`, {
        headers: { authorization: owner },
      });
      assert.equal((await res.json()).city, "London");
    });
  } finally {
    await server.close();
  }
});

Deno.test("a trailing slash or another case is 404 route-not-found, never a 405 refusing what it allows", async () => {
  const server = await startTestServer({});
  try {
    for (const target of ["/rest/books/", "/addresses/", "/REST/books", "/Addresses"]) {
      for (const method of ["GET", "POST"]) {
        for (const res of await both(server, { method, target })) {
          assert.equal(res.status, 404, `${method} ${target}`);
          assert.equal(JSON.parse(res.body).errors[0].error, "route-not-found");
          assert.equal(res.headers.get("allow"), null);
        }
      }
    }
    const put = await rawHttp1(server.httpUrl, { method: "PUT", target: "/rest/books" });
    assert.equal(put.status, 405);
    assert.equal(put.headers.get("allow"), "GET, HEAD, OPTIONS");
  } finally {
    await server.close();
  }
});

Deno.test("with auth on, a path no route declares needs a token; the public list does not", async () => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET, AUTH_BOOKS: "required" });
  const anyToken = `Bearer ${await hsToken({ sub: "eve", scope: "" })}`;
  try {
    for (const target of ["/nowhere", "/addresses/1/extra", "/rest/books/"]) {
      const res = await rawHttp1(server.httpUrl, { method: "GET", target });
      assert.equal(res.status, 401, target);
      assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer realm="books"/);
      const authed = await rawHttp1(server.httpUrl, {
        method: "GET",
        target,
        headers: { authorization: anyToken },
      });
      assert.equal(authed.status, 404, target);
    }
    for (const target of ["/", "/healthz", "/readyz", "/openapi.json", "/docs", "/docs/errors"]) {
      const res = await rawHttp1(server.httpUrl, { method: "GET", target });
      assert.equal(res.status, 200, target);
    }
    const page = await rawHttp1(server.httpUrl, {
      method: "GET",
      target: "/graphql",
      headers: { accept: "text/html" },
    });
    assert.equal(page.status, 200);
  } finally {
    await server.close();
  }
});

Deno.test("the gRPC listener: not canonical is INVALID_ARGUMENT, an undeclared path needs a token", async () => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET, AUTH_BOOKS: "required" });
  const client = h2c(server.grpcUrl!);
  const call = (target: string) =>
    client.request({
      method: "POST",
      target,
      headers: { "content-type": "application/grpc", te: "trailers" },
      body: new Uint8Array(5),
    });
  try {
    for (const target of ["/%62ooks.v1.BooksService/books", "/books.v1.BooksService/./books"]) {
      const res = await call(target);
      assert.equal(res.headers.get("grpc-status"), "3", target);
      // The same refusal as the HTTP listener's, word for word.
      const http = JSON.parse((await rawHttp1(server.httpUrl, { method: "POST", target })).body);
      const message = decodeURIComponent(res.headers.get("grpc-message") ?? "");
      assert.equal(message, http.errors[0].detail, target);
    }
    const unknown = await call("/books.v1.BooksService/other");
    assert.equal(unknown.headers.get("grpc-status"), "16");
    const books = await call("/books.v1.BooksService/books");
    assert.equal(books.headers.get("grpc-status"), "16");
    const health = await call("/grpc.health.v1.Health/Check");
    assert.equal(health.headers.get("grpc-status"), "0");
  } finally {
    client.close();
    await server.close();
  }
});

Deno.test("with CORS on, every answer varies by Origin, the answers in front of the router too", async () => {
  const server = await startTestServer({ CORS_ORIGINS: "https://app.example" });
  try {
    const requests: [string, RequestInit][] = [
      ["/rest/books", {}],
      ["/api/book/1", {}],
      ["/rest/books", { headers: { origin: "https://app.example" } }],
      ["/rest/books", { headers: { origin: "https://evil.example" } }],
      ["/addresses", {}],
      ["/nowhere", {}],
      ["/graphql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"query":"{ books { title } }"}',
      }],
    ];
    for (const [path, init] of requests) {
      const res = await fetch(`${server.httpUrl}${path}`, init);
      await res.body?.cancel();
      const vary = (res.headers.get("vary") ?? "").split(/,\s*/).map((v) => v.toLowerCase());
      assert.ok(vary.includes("origin"), `${path} ${JSON.stringify(init)}: Vary ${vary}`);
    }
  } finally {
    await server.close();
  }
});
