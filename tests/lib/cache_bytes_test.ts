/**
 * Caches are bounded by the bytes they hold, not by entries alone: unique GraphQL documents padded
 * to 64 KiB (few tokens, much text) and unique large tokens cannot grow memory past the bound.
 * Checked over sockets against the caches' own accounting, which must count what each entry
 * holds (its text, at least).
 */
import assert from "node:assert/strict";
import { stringBytes } from "../../lib/cache_bytes.ts";
import { createTokenCache } from "../../security/token_cache.ts";
import { createDocumentCache, createPreparer } from "../../graphql/prepare.ts";
import { createSchema } from "../../graphql/schema.ts";
import { loadConfig } from "../../lib/config.ts";
import { bearer, graphql } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const MIB = 1024 * 1024;
const PADDED_BYTES = 65_000;

/** A valid query of PADDED_BYTES, unique by its alias, padded with whitespace (not tokens). */
function paddedQuery(i: number): string {
  const query = `{ a${i}: books { title } }`;
  return query + " ".repeat(PADDED_BYTES - query.length);
}

Deno.test("GraphQL caches stay within their byte bound under unique padded 64 KiB queries", async () => {
  const server = await startTestServer();
  const { graphqlDocuments: documents, graphqlResults: results } = server.caches;
  try {
    const sent = 150;
    for (let i = 0; i < sent; i++) {
      const res = await graphql(server.httpUrl, { query: paddedQuery(i) });
      assert.equal(res.status, 200);
      assert.equal((await res.json()).data[`a${i}`].length > 0, true);
    }
    for (const [name, cache] of [["documents", documents], ["results", results]] as const) {
      const where = `${name}: ${cache.entries} entries, ${cache.bytes} of ${cache.maxBytes} bytes`;
      // A few MiB by default, and never more than that.
      assert.ok(cache.maxBytes <= 8 * MIB, where);
      assert.ok(cache.bytes <= cache.maxBytes, where);
      // Every entry kept is counted with its text at least, so the bound holds for memory too.
      assert.ok(cache.entries * PADDED_BYTES <= cache.bytes, where);
      assert.ok(cache.entries <= Math.floor(cache.maxBytes / PADDED_BYTES), where);
      assert.ok(cache.entries > 0 && cache.entries < sent, where);
    }
  } finally {
    await server.close();
  }
});

Deno.test("the verified-token cache stays within its byte bound under unique large tokens", async () => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET });
  const tokens = server.caches.tokens!;
  try {
    const sent = 700;
    let tokenBytes = Infinity;
    for (let i = 0; i < sent; i++) {
      const token = await hsToken({ sub: `user-${i}`, pad: "x".repeat(5_600) });
      tokenBytes = Math.min(tokenBytes, token.length);
      const res = await fetch(`${server.httpUrl}/rest/books`, { headers: bearer(token) });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    }
    const where = `${tokens.entries} tokens, ${tokens.bytes} of ${tokens.maxBytes} bytes`;
    assert.ok(tokenBytes > 7_000, `tokens of ${tokenBytes} bytes`);
    assert.ok(tokens.maxBytes <= 8 * MIB, where);
    assert.ok(tokens.bytes <= tokens.maxBytes, where);
    assert.ok(tokens.entries * tokenBytes <= tokens.bytes, where);
    assert.ok(tokens.entries > 0 && tokens.entries < sent, where);
  } finally {
    await server.close();
  }
});

Deno.test("cache accounting: text, tokens and expiry", () => {
  assert.equal(stringBytes("abc"), 3);
  assert.equal(stringBytes("äöü"), 3); // Latin-1: one byte each in V8
  assert.equal(stringBytes("a€"), 4); // two bytes each once any character is above U+00FF
  assert.equal(stringBytes("\ud83d\udca5"), 4);

  const documents = createDocumentCache({ maxBytes: 64 * 1024 });
  const prepare = createPreparer(createSchema(), loadConfig({}).graphql, documents);
  prepare("{ books { title } }");
  const small = documents.weight;
  prepare("{ books { title } }" + " ".repeat(10_000));
  assert.ok(documents.weight - small >= 10_000, "a padded document weighs its text");
  prepare("{ nope(" + " ".repeat(20_000)); // a syntax error is kept with its text too
  assert.ok(documents.weight >= small + 30_000);
  for (let i = 0; i < 20; i++) prepare(`{ a${i}: books { title } }` + " ".repeat(10_000));
  assert.ok(documents.weight <= 64 * 1024);

  const cache = createTokenCache<string>({ maxEntries: 3, maxBytes: 100 });
  cache.set("a", "A", 1000, 40);
  cache.set("b", "B", 1000, 40);
  cache.set("c", "C", 1000, 40); // over 100 bytes: "a" goes
  assert.deepEqual([cache.get("a", 0), cache.get("b", 0), cache.get("c", 0)], [
    undefined,
    "B",
    "C",
  ]);
  assert.deepEqual([cache.entries, cache.bytes], [2, 80]);
  cache.set("d", "D", 1000, 101); // larger than the bound: not kept
  assert.equal(cache.get("d", 0), undefined);
  cache.set("e", "E", 1000, 10);
  cache.set("f", "F", 1000, 10); // four entries: the oldest ("b") goes
  assert.deepEqual([cache.entries, cache.bytes], [3, 60]);
  assert.equal(cache.get("c", 1000), undefined, "expired at its deadline");
  assert.deepEqual([cache.entries, cache.bytes], [2, 20]);
});
