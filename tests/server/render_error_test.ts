/**
 * The edge's error rendering (server/render_error.ts) in front of the app: an error a framework
 * layer throws is a client error rendered by the one error model; an unexpected one is a 500 that
 * shows nothing of it, and its stack goes to the log.
 */
import assert from "node:assert/strict";
import { HTTPException } from "hono/http-exception";
import { createLogger } from "../../lib/log.ts";
import { createApp } from "../../server/app.ts";
import { createBookStore } from "../../store/books.ts";
import type { Store } from "../../store/store.ts";
import { entryOf } from "../support/answers.ts";
import { captureLogs } from "../support/logs.ts";
import { serveEntry } from "../support/server.ts";
import { stubStore } from "../support/stores.ts";

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

/** Storage that fails every call, readiness included, with internals in its message. */
function brokenStore(): Store {
  const fail = () => Promise.reject(new Error("disk on fire: secret-internal-detail"));
  return stubStore(createBookStore([]), fail, fail);
}

Deno.test("an unexpected failure is a 500 with the default body and no internals", async () => {
  const { logger, lines } = captureLogs("info");
  const app = createApp({ store: brokenStore(), logger, maxBodyBytes: 1024 });
  const http = serveEntry(entryOf(app));
  const res = await fetch(`${http.url}/addresses/5`);
  assert.equal(res.status, 500);
  assert.equal(res.headers.get("content-type"), "application/json");
  const requestId = res.headers.get("x-request-id");
  assert.ok(requestId);
  const body = await res.json();
  assert.deepEqual(Object.keys(body).sort(), ["error", "message", "path", "status", "timestamp"]);
  assert.equal(body.status, 500);
  assert.equal(body.error, "Internal Server Error");
  assert.equal(body.message, "");
  assert.equal(body.path, "/addresses/5");
  assert.match(body.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d$/);
  assert.ok(!JSON.stringify(body).includes("secret-internal-detail"));
  // Readiness reports the broken storage as 503, not 500.
  const ready = await fetch(`${http.url}/readyz`);
  assert.equal(ready.status, 503);
  assert.equal(ready.headers.get("retry-after"), "1");
  assert.equal((await ready.json()).errors[0].error, "service-unavailable");
  logger.flush();
  const error = lines.find((l) => l.msg === "unhandled error");
  assert.equal(error?.requestId, requestId);
  assert.match(String(error?.stack), /disk on fire/);
  await http.close();
});
