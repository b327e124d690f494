import assert from "node:assert/strict";
import { withCachedGraphql } from "../../graphql/cached_front.ts";
import { createGraphqlCaches } from "../../graphql/caches.ts";
import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createApp } from "../../server/app.ts";
import { createBookStore } from "../../store/books.ts";
import { DEFAULT_BOOKS, readCatalogue } from "../../store/kv/open.ts";
import { catalogueOnly, entryOf, see } from "../support/answers.ts";

const BOOKS = "{ books { title year author { firstName lastName } } }";

function post(body: string, headers: Record<string, string> = {}): () => RequestInit {
  return () => ({
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
}

Deno.test("cached GraphQL results answered in front of the app are the app's answers", async (t) => {
  const books = createBookStore(await readCatalogue(DEFAULT_BOOKS));
  const lines: string[] = [];
  const logger = createLogger({ write: (text) => lines.push(text) });
  const config = loadConfig({}).graphql;
  const deps = { store: catalogueOnly(books), logger, maxBodyBytes: 1024, graphql: config };
  const plainApp = createApp(deps);
  const caches = createGraphqlCaches();
  const results = caches.results;
  const hotApp = createApp({ ...deps, graphqlCaches: caches });
  const listen = { port: 0, hostname: "127.0.0.1", onListen: () => {} };
  const plain = Deno.serve(listen, entryOf(plainApp));
  let appCalls = 0;
  const hot = Deno.serve(
    listen,
    entryOf(
      hotApp,
      (inner) => withCachedGraphql({ books, logger, results, config }, inner),
      () => appCalls++,
    ),
  );
  const plainUrl = `http://127.0.0.1:${plain.addr.port}/graphql`;
  const hotUrl = `http://127.0.0.1:${hot.addr.port}/graphql`;
  const big = JSON.stringify({ query: BOOKS, variables: { pad: "x".repeat(2 * 65536) } });
  const cases: [string, () => RequestInit][] = [
    ["the books query", post(JSON.stringify({ query: BOOKS }))],
    [
      "charset and a client request id",
      post(JSON.stringify({ query: BOOKS }), {
        "content-type": "application/json; charset=utf-8",
        "x-request-id": "gql-hot-1",
      }),
    ],
    [
      "graphql-response+json",
      post(JSON.stringify({ query: BOOKS }), {
        accept: "application/graphql-response+json",
      }),
    ],
    ["operationName", post(JSON.stringify({ query: `query B ${BOOKS}`, operationName: "B" }))],
    ["empty variables", post(JSON.stringify({ query: BOOKS, variables: {} }))],
    ["variables (never cached)", post(JSON.stringify({ query: BOOKS, variables: { a: 1 } }))],
    ["a syntax error", post(JSON.stringify({ query: "{ books { " }))],
    ["not JSON", post("{nope")],
    ["an empty body", post("")],
    ["no query", post(JSON.stringify({ q: BOOKS }))],
    ["text/plain", post(JSON.stringify({ query: BOOKS }), { "content-type": "text/plain" })],
    ["Accept text/html only", post(JSON.stringify({ query: BOOKS }), { accept: "text/html" })],
    ["a body over the limit", post(big)],
    ["a streamed body (no Content-Length)", () => ({
      method: "POST",
      headers: { "content-type": "application/json" },
      body: ReadableStream.from([new TextEncoder().encode(JSON.stringify({ query: BOOKS }))]),
    })],
    ["GET", () => ({ method: "GET", headers: { accept: "application/json" } })],
  ];
  try {
    for (const [name, init] of cases) {
      await t.step(name, async () => {
        // Twice: the first answer fills the caches, the second may come from them.
        for (const round of [1, 2]) {
          const expected = await see(plainUrl, init());
          const actual = await see(hotUrl, init());
          assert.deepEqual(actual, expected, `round ${round}`);
        }
      });
    }

    await t.step("a cached result is answered without the app; others reach it", async () => {
      appCalls = 0;
      const cachedReply = await see(hotUrl, post(JSON.stringify({ query: BOOKS }))());
      assert.equal(cachedReply.status, 200);
      assert.equal(appCalls, 0);
      await see(hotUrl, post(JSON.stringify({ query: BOOKS, variables: { a: 1 } }))());
      assert.equal(appCalls, 1);
    });

    await t.step("a cached answer writes the same access-log line as the app", async () => {
      lines.length = 0;
      await see(hotUrl, post(JSON.stringify({ query: BOOKS }), { "x-request-id": "gql-log" })());
      logger.flush();
      const line = lines.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l))
        .find((l) => l.requestId === "gql-log");
      assert.equal(line?.msg, "request");
      assert.equal(line?.method, "POST");
      assert.equal(line?.path, "/graphql");
      assert.equal(line?.status, 200);
      assert.equal(typeof line?.durationMs, "number");
    });
  } finally {
    await Promise.all([plain.shutdown(), hot.shutdown()]);
  }
});
