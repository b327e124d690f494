import assert from "node:assert/strict";
import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createApp } from "../../server/app.ts";
import { httpEntry } from "../../server/entry.ts";
import type { Inner } from "../../server/handler.ts";
import { withAddressReads } from "../../routes/address_front.ts";
import { openGate } from "../../security/gate.ts";
import { openStore } from "../../store/store.ts";
import { EXAMPLE_INPUT } from "../../lib/address.ts";
import { see } from "../support/answers.ts";
import { checkContract } from "../support/contract.ts";
import { bearer, V2 } from "../support/requests.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const SCOPES = "addresses:read addresses:write";

Deno.test("GET /addresses and GET /addresses/{id} in front of the router answer exactly as the app does", async (t) => {
  using kv = await Deno.openKv(":memory:");
  const store = await openStore(kv, { seedBooks: [], label: "test" });
  const alice = await store.addresses.create("alice", EXAMPLE_INPUT);
  const bob = await store.addresses.create("bob", { ...EXAMPLE_INPUT, name: "Bob" });
  const gone = await store.addresses.create("alice", EXAMPLE_INPUT);
  await store.addresses.delete("alice", gone.address.id);
  const lines: string[] = [];
  const logger = createLogger({ write: (text) => lines.push(text) });
  const app = createApp({ store, logger, maxBodyBytes: 1024 });
  const config = loadConfig({ AUTH_JWT_SECRET: SECRET, RATE_LIMIT: "100000/h" });
  let appCalls = 0;
  const inner: Inner = (request, admission) => {
    appCalls++;
    return app.fetch(request, admission);
  };
  // Each server has a gate of its own: their rate-limit counters move together.
  const entry = async (front?: (inner: Inner) => Inner) =>
    httpEntry(
      { gate: await openGate(config), cors: false, router: app.router },
      front ? front(inner) : inner,
      inner,
    );
  const listen = { port: 0, hostname: "127.0.0.1", onListen: () => {} };
  const plain = Deno.serve(listen, await entry());
  const fronted = Deno.serve(
    listen,
    await entry((next) => withAddressReads({ addresses: store.addresses, logger }, next)),
  );
  const plainUrl = `http://127.0.0.1:${plain.addr.port}`;
  const frontUrl = `http://127.0.0.1:${fronted.addr.port}`;
  checkContract(plainUrl);
  checkContract(frontUrl);
  const token = bearer(await hsToken({ sub: "alice", scope: SCOPES }));
  const readOnly = bearer(await hsToken({ sub: "alice", scope: "books:read" }));
  for (let i = 0; i < 6; i++) {
    await store.addresses.create("alice", { ...EXAMPLE_INPUT, city: `C${i}` });
  }
  const cursor = (await store.addresses.list("alice", { limit: 2 })).nextCursor!;
  const etag = alice.etag;
  const a = alice.address.id;
  try {
    const cases: [string, Record<string, string>, string?][] = [
      [`/addresses/${a}`, token],
      [`/addresses/${a}?x=1`, token],
      [`/addresses/${a}`, { ...token, accept: "application/vnd.books.v1+json" }],
      [`/addresses/${a}`, { ...token, accept: V2 }],
      [`/addresses/${a}`, { ...token, accept: "text/html, application/json;q=0.5" }],
      [`/addresses/${a}`, { ...token, accept: "application/problem+json" }],
      [`/addresses/${a}`, { ...token, accept: "application/xml" }],
      [`/addresses/${a}`, { ...token, accept: "application/json;q=0" }],
      [`/addresses/${a}`, { ...token, "x-request-id": "client-chosen-1" }],
      [`/addresses/${a}`, { ...token, "x-request-id": "not a valid id" }],
      [`/addresses/${a}`, { ...token, "if-none-match": etag }],
      [`/addresses/${a}`, { ...token, "if-none-match": `W/${etag}` }],
      [`/addresses/${a}`, { ...token, "if-none-match": `"other", ${etag}` }],
      [`/addresses/${a}`, { ...token, "if-none-match": "*" }],
      [`/addresses/${a}`, { ...token, "if-none-match": '"stale"' }],
      [`/addresses/${a}`, { ...token, accept: V2, "if-none-match": etag }],
      [`/addresses/${bob.address.id}`, token],
      [`/addresses/${bob.address.id}`, { ...token, "if-none-match": "*" }],
      [`/addresses/${gone.address.id}`, token],
      ["/addresses/99999", token],
      ["/addresses/0", token],
      [`/addresses/0${a}`, token],
      ["/addresses/1e3", token],
      ["/addresses/99999999999999999999", token],
      ["/addresses/9007199254740993", token],
      ["/addresses/", token],
      ["/addresses/export", token],
      [`/addresses/${a}`, {}],
      [`/addresses/${a}`, bearer("not.a.token")],
      [`/addresses/${a}`, readOnly],
      [`/addresses/${a}`, token, "HEAD"],
      [`/addresses/${a}`, token, "OPTIONS"],
      ["/addresses", token],
      ["/addresses?", token],
      ["/addresses?limit=3", token],
      ["/addresses?limit=500", token],
      ["/addresses?limit=0050", token],
      ["/addresses?limit=501", token],
      ["/addresses?limit=0", token],
      ["/addresses?limit=abc", token],
      ["/addresses?limit=2&limit=3", token],
      ["/addresses?limit=2&", token],
      [`/addresses?cursor=${cursor}`, token],
      [`/addresses?cursor=${cursor}&limit=2`, token],
      [`/addresses?limit=2&cursor=${cursor}`, token],
      [`/addresses?cursor=${cursor}&cursor=${cursor}`, token],
      ["/addresses?cursor=bogus", token],
      [`/addresses?cursor=%${cursor.charCodeAt(0).toString(16)}${cursor.slice(1)}`, token],
      ["/addresses?limit=2&other=1", token],
      ["/addresses?limit=2", { ...token, accept: V2 }],
      ["/addresses?limit=2", { ...token, accept: "application/xml" }],
      ["/addresses?limit=2", { ...token, "if-none-match": "*" }],
      ["/addresses?limit=2", { ...token, "x-request-id": "client-chosen-2" }],
      ["/addresses", {}],
      ["/addresses", readOnly],
      ["/addresses", token, "HEAD"],
    ];
    for (const [path, headers, method] of cases) {
      const shown = Object.fromEntries(
        Object.entries(headers).map(([k, v]) => [k, k === "authorization" ? v.slice(0, 20) : v]),
      );
      await t.step(`${method ?? "GET"} ${path} ${JSON.stringify(shown)}`, async () => {
        const init = { method: method ?? "GET", headers };
        const expected = await see(`${plainUrl}${path}`, init);
        const actual = await see(`${frontUrl}${path}`, init);
        // Error bodies link to the server's own documentation.
        expected.body = expected.body.replaceAll(plainUrl, frontUrl);
        assert.deepEqual(withoutRateLimit(actual), withoutRateLimit(expected));
        if (expected.status !== 401) assert.ok(actual.headers["ratelimit"], "the gate's headers");
      });
    }

    await t.step("a read of an address the caller holds never reaches the app", async () => {
      const fresh = await store.addresses.create("alice", EXAMPLE_INPUT);
      appCalls = 0;
      const extras: Record<string, string>[] = [{}, { "if-none-match": fresh.etag }];
      for (const extra of extras) {
        const res = await fetch(`${frontUrl}/addresses/${fresh.address.id}`, {
          headers: { ...token, ...extra },
        });
        assert.ok([200, 304].includes(res.status));
        await res.body?.cancel();
      }
      assert.equal(appCalls, 0);
      await (await fetch(`${frontUrl}/addresses/${bob.address.id}`, { headers: token })).body
        ?.cancel();
      assert.equal(appCalls, 1, "another owner's address is the app's 404");
      appCalls = 0;
      for (const query of ["", "?limit=2", `?limit=2&cursor=${cursor}`]) {
        const res = await fetch(`${frontUrl}/addresses${query}`, { headers: token });
        assert.equal(res.status, 200);
        await res.body?.cancel();
      }
      assert.equal(appCalls, 0, "pages never reach the app");
    });

    await t.step("the front writes the app's access-log line", async () => {
      const fresh = await store.addresses.create("alice", EXAMPLE_INPUT);
      lines.length = 0;
      for (const [base, id] of [[plainUrl, "log-plain"], [frontUrl, "log-front"]] as const) {
        const res = await fetch(`${base}/addresses/${fresh.address.id}?q=secret`, {
          headers: { ...token, "x-request-id": id },
        });
        await res.body?.cancel();
      }
      logger.flush();
      const logged = lines.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l));
      const line = (id: string) => {
        const found = logged.find((l) => l.requestId === id);
        assert.ok(found, `a line for ${id}`);
        assert.equal(typeof found.durationMs, "number");
        return { ...found, time: undefined, durationMs: undefined, requestId: undefined };
      };
      assert.deepEqual(line("log-front"), line("log-plain"));
      assert.equal(line("log-front").path, `/addresses/${fresh.address.id}`);
      lines.length = 0;
      for (const [base, id] of [[plainUrl, "page-plain"], [frontUrl, "page-front"]] as const) {
        const res = await fetch(`${base}/addresses?limit=2`, {
          headers: { ...token, "x-request-id": id },
        });
        await res.body?.cancel();
      }
      logger.flush();
      logged.length = 0;
      logged.push(...lines.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l)));
      assert.deepEqual(line("page-front"), line("page-plain"));
      assert.equal(line("page-front").path, "/addresses");
    });
  } finally {
    await Promise.all([plain.shutdown(), fronted.shutdown()]);
  }
});

/** An answer without the rate limit's headers (their remaining count moves with every request). */
function withoutRateLimit(seen: Awaited<ReturnType<typeof see>>) {
  const headers = { ...seen.headers };
  delete headers["ratelimit"];
  delete headers["ratelimit-policy"];
  return { ...seen, headers };
}
