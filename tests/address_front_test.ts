import assert from "node:assert/strict";
import { loadConfig } from "../lib/config.ts";
import { createLogger } from "../lib/log.ts";
import { createApp } from "../server/app.ts";
import { httpEntry } from "../server/entry.ts";
import type { Inner } from "../server/handler.ts";
import { withAddressReads } from "../routes/address_front.ts";
import { openGate } from "../security/gate.ts";
import { openStore } from "../store/store.ts";
import { EXAMPLE_INPUT } from "../lib/address.ts";
import { see } from "./support/answers.ts";
import { checkContract } from "./support/contract.ts";
import { bearer, V2 } from "./support/requests.ts";
import { hsToken, SECRET } from "./support/tokens.ts";

const SCOPES = "addresses:read addresses:write";

Deno.test("GET /addresses/{id} in front of the router answers exactly as the app does", async (t) => {
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
  const etag = `"${alice.versionstamp}"`;
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
      const extras: Record<string, string>[] = [{}, { "if-none-match": `"${fresh.versionstamp}"` }];
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
