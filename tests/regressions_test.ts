/**
 * Regression tests: each one is a defect that was found (by a user, a review or the fuzz suite,
 * see docs/fuzzing.md) and fixed. The test name says what broke; the comment says how it was
 * found (with the fuzz seed when a fuzzer found it).
 */
import assert from "node:assert/strict";
import { HTTPException } from "hono/http-exception";
import { createApp } from "../edge/app.ts";
import { createLogger } from "../lib/log.ts";
import { createBookStore } from "../store/books.ts";
import type { Store } from "../store/store.ts";
import { startTestServer } from "./support/server.ts";

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

function emptyStore(): Store {
  const none = () => Promise.resolve(undefined as never);
  return {
    books: createBookStore([]),
    addresses: {
      create: none,
      get: none,
      put: none,
      putAt: none,
      patch: none,
      delete: none,
      list: none,
    },
    ping: () => Promise.resolve(),
  };
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
  const http = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, app.fetch);
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
