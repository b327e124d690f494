import assert from "node:assert/strict";
import { createLru } from "../../graphql/lru.ts";
import { createDocumentCache, createPreparer } from "../../graphql/prepare.ts";
import { createResultCache } from "../../graphql/result_cache.ts";
import { createSchema } from "../../graphql/schema.ts";
import { ConfigError, loadConfig } from "../../lib/config.ts";

const config = loadConfig({}).graphql;

Deno.test("prepared documents are cached by query text", () => {
  const prepare = createPreparer(createSchema(), config);
  const first = prepare("{ books { title } }");
  assert.equal(first.ok, true);
  // The same object: the second call parsed and validated nothing.
  assert.equal(prepare("{ books { title } }"), first);
  assert.notEqual(prepare("{ books { year } }"), first);
  const bad = prepare("{ books { nope } }");
  assert.equal(bad.ok, false);
  assert.equal(prepare("{ books { nope } }"), bad);
});

Deno.test("the document cache is bounded by entries and by bytes", () => {
  const schema = createSchema();
  const byEntries = createPreparer(schema, config, createDocumentCache({ maxEntries: 2 }));
  const a = byEntries("{ books { title } }");
  byEntries("{ books { year } }");
  byEntries("{ books { title } }"); // used again: survives the next eviction
  byEntries("{ __typename }");
  assert.equal(byEntries("{ books { title } }"), a);
  // Room for one small document (about 3 KB by the estimate), not two.
  const byBytes = createPreparer(schema, config, createDocumentCache({ maxBytes: 5000 }));
  const small = byBytes("{ books { title } }");
  const larger = byBytes("{ books { title year } }"); // the unused first is evicted
  assert.equal(byBytes("{ books { title year } }"), larger);
  assert.notEqual(byBytes("{ books { title } }"), small);
});

Deno.test("LRU gives recently used entries a second chance and respects weight", () => {
  const lru = createLru<number>(3, 100);
  lru.set("a", 1, 1);
  lru.set("b", 2, 1);
  lru.set("c", 3, 1);
  lru.get("a");
  lru.set("d", 4, 1);
  assert.deepEqual(["a", "b", "c", "d"].map((k) => lru.get(k)), [1, undefined, 3, 4]);
  assert.equal(lru.size, 3);
  const heavy = createLru<number>(10, 5);
  heavy.set("x", 1, 3);
  heavy.set("y", 2, 3);
  assert.deepEqual([heavy.get("x"), heavy.get("y"), heavy.weight], [undefined, 2, 3]);
  heavy.set("too-big", 3, 6);
  assert.equal(heavy.get("too-big"), undefined);
});

Deno.test("results are cached per catalogue snapshot, never with variables", () => {
  const cache = createResultCache();
  const snapshot = Object.freeze([]);
  const body = '{"data":{}}';
  const params = { query: "{ books { title } }", operationName: undefined, variables: undefined };
  const key = cache.keyOf(params)!;
  cache.set(key, snapshot, body);
  assert.equal(cache.get(key, snapshot), body);
  assert.equal(cache.get(key, Object.freeze([])), undefined, "a new snapshot misses");
  assert.notEqual(cache.keyOf({ ...params, operationName: "A" }), key);
  assert.equal(cache.keyOf({ ...params, variables: { x: 1 } }), undefined);
  assert.equal(cache.keyOf({ ...params, variables: {} }), key);
});

Deno.test("GRAPHQL_* configuration: defaults and one-line errors naming the variable", () => {
  assert.deepEqual(config, {
    maxDocumentBytes: 65536,
    maxTokens: 2000,
    maxDepth: 10,
    maxAliases: 30,
    maxDirectives: 50,
    maxCost: 1000,
    maxMutations: 10,
    introspection: true,
  });
  const set = loadConfig({ GRAPHQL_MAX_COST: "250", GRAPHQL_INTROSPECTION: "false" }).graphql;
  assert.equal(set.maxCost, 250);
  assert.equal(set.introspection, false);
  for (
    const [name, value] of [
      ["GRAPHQL_MAX_DEPTH", "0"],
      ["GRAPHQL_MAX_ALIASES", "many"],
      ["GRAPHQL_MAX_DOCUMENT_BYTES", "-1"],
      ["GRAPHQL_INTROSPECTION", "yes"],
      ["GRAPHQL_MAX_MUTATIONS", "0"],
    ]
  ) {
    assert.throws(
      () => loadConfig({ [name!]: value }),
      (error: Error) =>
        error instanceof ConfigError && error.message.startsWith(`invalid ${name}=`),
    );
  }
});

Deno.test("a request body answered from the cache finds its key by its exact text", () => {
  const cache = createResultCache();
  const snapshot = Object.freeze([]);
  const text = '{"query":"{ books { title } }"}';
  const params = { query: "{ books { title } }", operationName: undefined, variables: undefined };
  const key = cache.keyOf(params)!;
  assert.equal(cache.keyOfBody(text), undefined, "nothing stored yet");
  cache.set(key, snapshot, '{"data":{}}', text);
  assert.equal(cache.keyOfBody(text), key);
  assert.equal(cache.keyOfBody(` ${text}`), undefined, "another text is parsed as usual");
  // A key is no body: the query's own text finds nothing among the bodies.
  assert.equal(cache.keyOfBody(params.query), undefined);
  const long = JSON.stringify({ query: `{ books { title } }${" ".repeat(4096)}` });
  cache.set(`${key} `, snapshot, '{"data":{}}', long);
  assert.equal(cache.keyOfBody(long), undefined, "long bodies are not remembered");
  assert.ok(cache.stats.bytes > 0 && cache.stats.entries === 3);
});
