/**
 * Regression tests: each one is a defect that was found (by a user, a review or the fuzz suite,
 * see docs/fuzzing.md) and fixed. The test name says what broke; the comment says how it was
 * found (with the fuzz seed when a fuzzer found it).
 */
import { entryOf } from "./support/answers.ts";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type http2 from "node:http2";
import { HTTPException } from "hono/http-exception";
import { createApp } from "../server/app.ts";
import { createLogger } from "../lib/log.ts";
import { createBookStore } from "../store/books.ts";
import type { Store } from "../store/store.ts";
import { h2Request } from "./support/raw_http.ts";
import { rawSession } from "./support/rpc_clients.ts";
import { graphqlDoor, restDoor, rpcDoor, rpcTransport } from "./support/address_doors.ts";
import { graphql } from "./support/requests.ts";
import { startTestServer } from "./support/server.ts";
import { stubStore } from "./support/stores.ts";

const VALID = { name: "Ada", city: "London", postalCode: "W1J 7NT" };

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
        body: JSON.stringify(VALID),
      });
      assert.equal(post.status, 201, `POST with ${JSON.stringify(type)}`);
      const created = await post.json();
      assert.equal(post.headers.get("location"), `/addresses/${created.id}`);
      const put = await fetch(`${server.httpUrl}/addresses/${created.id}`, {
        method: "PUT",
        headers: { "content-type": type },
        body: JSON.stringify({ ...VALID, city: "Paris" }),
      });
      assert.equal(put.status, 200, `PUT with ${JSON.stringify(type)}`);
      await put.body?.cancel();
      const stored = await (await fetch(`${server.httpUrl}/addresses/${created.id}`)).json();
      assert.deepEqual(stored, { ...VALID, id: created.id, city: "Paris" });
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
        body: JSON.stringify(VALID),
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

/** No book, and an address book that answers nothing. */
function emptyStore(): Store {
  return stubStore(createBookStore([]), () => Promise.resolve(undefined as never));
}

// Issue 10, defect 1 at depth: any HTTPException a framework layer throws (validators, gates,
// middleware) is a client error with its own status and code, rendered by the one error model.
Deno.test("a framework HTTPException is rendered by the error model with its status, not 500", async () => {
  const lines: string[] = [];
  const logger = createLogger({ write: (text) => lines.push(text) });
  const app = createApp({ store: emptyStore(), logger, maxBodyBytes: 1024 });
  app.get("/throw/:status", (c) => {
    const status = Number(c.req.param("status"));
    const res = new Response(null, {
      status,
      headers: { "www-authenticate": 'Bearer realm="x"', "retry-after": "7", "x-secret": "s" },
    });
    throw new HTTPException(status as 400, { message: "Framework says no", res });
  });
  const http = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, entryOf(app));
  const base = `http://127.0.0.1:${http.addr.port}`;
  try {
    const expected: [number, string][] = [
      [400, "bad-request"],
      [401, "unauthorized"],
      [403, "forbidden"],
      [404, "route-not-found"],
      [408, "bad-request"],
      [413, "payload-too-large"],
      [415, "unsupported-media-type"],
      [422, "bad-request"],
      [429, "rate-limited"],
      [503, "service-unavailable"],
    ];
    for (const [status, code] of expected) {
      const res = await fetch(`${base}/throw/${status}`, { headers: { "accept-language": "de" } });
      const { errors } = await res.json();
      const want = code === "bad-request" ? 400 : status;
      assert.equal(res.status, want, `HTTPException(${status})`);
      assert.equal(errors[0].error, code);
      assert.equal(errors[0].detail, "Framework says no.");
      assert.match(errors[0].help, new RegExp(`/docs/errors#${code}$`));
      assert.equal(res.headers.get("content-language"), "de");
      assert.equal(res.headers.get("www-authenticate"), 'Bearer realm="x"');
      assert.equal(res.headers.get("x-secret"), null);
      assert.ok(res.headers.get("x-request-id"));
    }
    const limited = await fetch(`${base}/throw/429`);
    await limited.body?.cancel();
    assert.equal(limited.headers.get("retry-after"), "7");
    const problem = await fetch(`${base}/throw/415`, {
      headers: { accept: "application/problem+json" },
    });
    assert.equal(problem.headers.get("content-type"), "application/problem+json");
    assert.equal((await problem.json()).status, 415);
    // A framework 500 is still unexpected: the default body, the stack in the log only.
    const unexpected = await fetch(`${base}/throw/500`);
    assert.equal(unexpected.status, 500);
    assert.equal((await unexpected.json()).message, "");
  } finally {
    await http.shutdown();
  }
});

/** One HTTP/2 POST on the gRPC listener: status, headers and trailers merged, body. */
async function h2Call(
  session: http2.ClientHttp2Session,
  path: string,
  headers: Record<string, string>,
  body: Uint8Array,
): Promise<{ status: number; meta: Headers; body: Buffer }> {
  const answer = await h2Request(session, {
    method: "POST",
    target: path,
    headers: { te: "trailers", ...headers },
    body: Buffer.from(body),
  });
  return { status: answer.status, meta: answer.fields, body: answer.body };
}

const BOOKS = "/books.v1.BooksService/books";
const REFLECTION = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";

// Fuzz finding (REST fuzz, seeds 1922064966 and 190438894): a Connect call whose body is not
// compressed as its Content-Encoding says was 500 `internal` "decompression failed"; Deno's
// node:zlib reports brotli errors with codes Connect-ES does not know.
Deno.test("a Connect body that does not decompress is 400 invalid_argument on both ports, not 500", async () => {
  const server = await startTestServer();
  const session = rawSession(server.grpcUrl!);
  try {
    for (const encoding of ["br", "gzip"]) {
      const headers = { "content-type": "application/json", "content-encoding": encoding };
      const res = await fetch(server.httpUrl + BOOKS, { method: "POST", headers, body: "{}" });
      assert.equal(res.status, 400, encoding);
      assert.equal((await res.json()).code, "invalid_argument");
      const h2 = await h2Call(session, BOOKS, headers, new TextEncoder().encode("{}"));
      assert.equal(h2.status, 400, encoding);
      assert.equal(JSON.parse(h2.body.toString()).code, "invalid_argument");
      // Over gRPC: a compressed envelope that is not gzip.
      const grpc = await h2Call(session, BOOKS, {
        "content-type": "application/grpc",
        "grpc-encoding": encoding,
      }, new Uint8Array([1, 0, 0, 0, 2, 0x7b, 0x7d]));
      assert.equal(grpc.meta.get("grpc-status"), "3", encoding);
    }
  } finally {
    await server.close();
  }
});

// Fuzz finding (RPC fuzz, seed 642755631): an undecodable message on a stream (reflection) was
// INTERNAL "parse binary" over gRPC and gRPC-Web, as was an undecodable unary message.
Deno.test("an undecodable message is INVALID_ARGUMENT over gRPC and gRPC-Web, unary and streaming", async () => {
  const server = await startTestServer();
  const session = rawSession(server.grpcUrl!);
  try {
    // A valid first reflection request (list_services), then bytes that are no message.
    const stream = new Uint8Array([0, 0, 0, 0, 2, 0x3a, 0, 0, 0, 0, 0, 2, 0, 0]);
    const grpc = await h2Call(session, REFLECTION, { "content-type": "application/grpc" }, stream);
    assert.equal(grpc.meta.get("grpc-status"), "3");
    assert.match(decodeURIComponent(grpc.meta.get("grpc-message")!), /^parse binary/);
    const web = await h2Call(session, REFLECTION, {
      "content-type": "application/grpc-web+proto",
    }, stream);
    assert.match(web.body.toString("latin1"), /grpc-status: ?3\r\n/);
    const unary = await h2Call(
      session,
      BOOKS,
      { "content-type": "application/grpc-web+proto" },
      new Uint8Array([0, 0, 0, 0, 3, 0xff, 0xff, 0xff]),
    );
    assert.match(unary.body.toString("latin1"), /grpc-status: ?3\r\n/);
    const viaFetch = await fetch(server.httpUrl + BOOKS, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: new Uint8Array([0, 0, 0, 0, 3, 0xff, 0xff, 0xff]),
    });
    assert.match(await viaFetch.text(), /grpc-status: ?3\r\n/);
    // The listener still answers a good call on the same connection.
    const ok = await h2Call(
      session,
      BOOKS,
      { "content-type": "application/grpc" },
      new Uint8Array(5),
    );
    assert.equal(ok.meta.get("grpc-status"), "0");
  } finally {
    await server.close();
  }
});

// Fuzz finding (RPC fuzz, seed 164412583): a Connect GET with base64=1 and a message that is not
// base64 was 500 `internal` on both ports.
Deno.test("a Connect GET whose message is not base64 is 400 invalid_argument, not 500", async () => {
  const server = await startTestServer();
  const session = rawSession(server.grpcUrl!);
  try {
    const query = "?encoding=proto&message=!!!&base64=1&connect=v1";
    const res = await fetch(server.httpUrl + BOOKS + query);
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, "invalid_argument");
    const h2 = await h2Request(session, { method: "GET", target: BOOKS + query });
    assert.equal(h2.status, 400);
    assert.equal(JSON.parse(h2.body.toString()).code, "invalid_argument");
    // A good GET still works.
    const good = await fetch(server.httpUrl + BOOKS + "?encoding=json&message=%7B%7D&connect=v1");
    assert.equal(good.status, 200);
    await good.body?.cancel();
  } finally {
    await server.close();
  }
});

// Fuzz finding (REST fuzz, seed 1884627760): a request to the Connect path on the HTTP port that
// speaks no RPC protocol (a GET without `encoding`, a text/plain POST) got a bare 415 with no body.
Deno.test("a non-RPC request to an RPC path on the HTTP port gets the 7.4 415 body", async () => {
  const server = await startTestServer();
  try {
    for (
      const init of [{}, { method: "POST", headers: { "content-type": "text/plain" }, body: "x" }]
    ) {
      const res = await fetch(server.httpUrl + BOOKS, init);
      assert.equal(res.status, 415);
      assert.equal(res.headers.get("content-type"), "application/json");
      assert.ok(res.headers.get("x-request-id"));
      assert.equal((await res.json()).errors[0].error, "unsupported-media-type");
    }
  } finally {
    await server.close();
  }
});

// Seen in CI's log of the RPC fuzz (TimeoutOverflowWarning, seed 1422774553): Connect-ES arms a
// timer for the whole timeout, and a timer past 2^31 − 1 ms fires after 1 ms, so a call with a
// legal but distant deadline ended DEADLINE_EXCEEDED after 1 ms (a stream at once).
Deno.test("a deadline further away than a timer can wait is no deadline, on every protocol", async () => {
  const server = await startTestServer();
  const session = rawSession(server.grpcUrl!);
  try {
    const hours = { "grpc-timeout": "99999999H" };
    const web = { "content-type": "application/grpc-web+proto", ...hours };
    const viaFetch = await fetch(server.httpUrl + BOOKS, {
      method: "POST",
      headers: web,
      body: new Uint8Array(5),
    });
    assert.equal(viaFetch.status, 200);
    assert.match(await viaFetch.text(), /grpc-status: ?0\r\n/);
    const connect = { "content-type": "application/json", "connect-timeout-ms": "9999999999" };
    const res = await fetch(server.httpUrl + BOOKS, {
      method: "POST",
      headers: connect,
      body: "{}",
    });
    assert.equal(res.status, 200);
    assert.ok(Array.isArray((await res.json()).book));
    const h2Web = await h2Call(session, BOOKS, web, new Uint8Array(5));
    assert.match(h2Web.body.toString("latin1"), /grpc-status: ?0\r\n/);
    const h2Connect = await h2Call(session, BOOKS, connect, new TextEncoder().encode("{}"));
    assert.equal(h2Connect.status, 200);
    // Native gRPC through Connect's handler (a body the fast path hands over: an unknown field).
    const unknownField = new Uint8Array([0, 0, 0, 0, 2, 0x08, 0x01]);
    const grpc = await h2Call(
      session,
      BOOKS,
      { "content-type": "application/grpc", ...hours },
      unknownField,
    );
    assert.equal(grpc.meta.get("grpc-status"), "0", String(grpc.meta.get("grpc-message")));
    // A stream with a distant deadline stays open (it ended DEADLINE_EXCEEDED after 1 ms).
    for (const type of ["application/grpc", "application/grpc-web+proto"]) {
      const watch = session.request({
        ":method": "POST",
        ":path": "/grpc.health.v1.Health/Watch",
        te: "trailers",
        "content-type": type,
        ...hours,
      });
      let ended = "";
      watch.on("trailers", (t) => (ended = String(t["grpc-status"])));
      const first = new Promise((resolve) => watch.once("data", resolve));
      watch.end(new Uint8Array(5));
      await first;
      let tail = "";
      watch.on("data", (chunk: Buffer) => (tail += chunk.toString("latin1")));
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(ended, "", `${type}: the watch ended with status ${ended}`);
      assert.doesNotMatch(tail, /grpc-status/, type);
      watch.close();
    }
    // A near deadline still applies.
    const near = await fetch(server.httpUrl + BOOKS, {
      method: "POST",
      headers: { ...connect, "connect-timeout-ms": "1000" },
      body: "{}",
    });
    assert.equal(near.status, 200);
    await near.body?.cancel();
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

// Issue 31 (the model test across styles, seed 1503001435): a replace or update whose id or
// If-Match REST refuses, with an address input that is wrong too, was `invalid-field` over
// GraphQL (its input variables were checked before anything else) and `invalid-parameter` over
// REST and gRPC, which read the path and headers before the body.
Deno.test("GraphQL refuses a wrong id or ifMatch before a wrong address input, as REST and gRPC do", async () => {
  const server = await startTestServer();
  const bad = { ...VALID, postalCode: "a!b" };
  const etag = `"${"e".repeat(1000)}"`;
  try {
    const doors = [
      restDoor(server.httpUrl),
      graphqlDoor(server.httpUrl),
      rpcDoor(rpcTransport(server, "gRPC"), "gRPC"),
    ];
    const created = await doors[0]!.create(VALID);
    assert.ok(created.ok);
    const id = created.value.address.id;
    for (const door of doors) {
      const cases = [
        ["replace, id 0", await door.replace(0, bad)],
        ["update, id 0", await door.update(0, { postalCode: "a!b" })],
        ["replace, If-Match too long", await door.replace(id, bad, etag)],
        ["update, If-Match too long", await door.update(id, { city: "" }, etag)],
      ] as const;
      for (const [what, outcome] of cases) {
        assert.ok(!outcome.ok && outcome.code === "invalid-parameter", `${door.style}: ${what}`);
      }
      // Only the input wrong: its own code.
      const input = await door.replace(id, bad);
      assert.ok(!input.ok && input.code === "invalid-field", door.style);
    }
    // A literal id in the document too.
    const literal = await graphql(server.httpUrl, {
      query: "mutation ($input: AddressInput!) { replaceAddress(id: -1, input: $input) { id } }",
      variables: { input: bad },
    });
    assert.equal((await literal.json()).errors[0].extensions.code, "invalid-parameter");
    const stored = await doors[0]!.get(id);
    assert.deepEqual(stored.ok && stored.value.address, { id, ...VALID });
  } finally {
    await server.close();
  }
});
