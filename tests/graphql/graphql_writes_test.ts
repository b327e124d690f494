/**
 * GraphQL's writes over a socket: each mutation field is one call against the rate limit, charged
 * all or none before any write runs, with at most GRAPHQL_MAX_MUTATIONS of them per operation; and
 * a mutation whose field fails part-way answers what its other fields stored.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { EXAMPLE_INPUT } from "../../lib/address.ts";
import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { createApp } from "../../server/app.ts";
import { httpEntry } from "../../server/entry.ts";
import { createRefusals } from "../../server/refusals.ts";
import { createGate } from "../../security/gate.ts";
import { createRateLimiter } from "../../security/rate_limit.ts";
import { ownerPrefix } from "../../store/addresses/keys.ts";
import { openStore } from "../../store/store.ts";
import { addressBook, answerOf, bearer, graphql, taggedInput } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const SCOPES = "addresses:read addresses:write";

/** A mutation of `count` aliased `createAddress` fields, each answering its id and etag. */
function creations(count: number, from = 0): string {
  const fields = Array.from(
    { length: count },
    (_, i) => `a${from + i}: createAddress(input: $input) { id etag }`,
  );
  return `mutation ($input: AddressInput!) { ${fields.join(" ")} }`;
}

/** How many addresses `owner` has in the KV file, read apart from the server. */
async function storedOf(kvPath: string, owner: string): Promise<number> {
  using kv = await Deno.openKv(kvPath);
  let count = 0;
  for await (const _ of kv.list({ prefix: ownerPrefix(owner) })) count++;
  return count;
}

Deno.test("GraphQL charges each write against the rate limit, all or none, before any write", async () => {
  const server = await startTestServer({
    AUTH_JWT_SECRET: SECRET,
    RATE_LIMIT: "10/min",
    GRAPHQL_MAX_MUTATIONS: "20",
    GRPC_PORT: "off",
  });
  try {
    const token = await hsToken({ sub: "writer", scope: SCOPES });
    const caller = bearer(token);
    // The token's first request is paid from the client address's bucket (security/gate.ts).
    const warm = await graphql(server.httpUrl, { query: "{ __typename }" }, caller);
    assert.equal(warm.status, 200);
    await warm.body?.cancel();

    // Issue 35: 12 aliased creations stored 12 addresses with RATE_LIMIT=10/min.
    const twelve = await answerOf(
      await graphql(server.httpUrl, {
        query: creations(12),
        variables: { input: EXAMPLE_INPUT },
      }, caller),
    );
    assert.equal(twelve.status, 429, twelve.text);
    assert.equal(twelve.body.data, undefined);
    assert.deepEqual(
      twelve.body.errors.map((e: { extensions: { code: string } }) => e.extensions),
      [
        { code: "rate-limited" },
      ],
    );
    assert.match(twelve.body.errors[0].message, /12 calls; the rate limit allows 10 at most/);
    assert.ok(Number(twelve.headers.get("retry-after")) >= 1);
    assert.equal(twelve.headers.get("ratelimit-policy"), '"default";q=10;w=60');
    assert.equal(await storedOf(server.kvPath, "writer"), 0, "nothing stored");

    // The refused request was one call; 9 writes are what is left, and they run.
    const nine = await answerOf(
      await graphql(server.httpUrl, {
        query: creations(9),
        variables: { input: EXAMPLE_INPUT },
      }, caller),
    );
    assert.equal(nine.status, 200, nine.text);
    assert.equal(nine.body.errors, undefined);
    assert.equal(Object.keys(nine.body.data).length, 9);
    assert.match(nine.headers.get("ratelimit") ?? "", /^"default";r=0;t=\d+$/);
    assert.equal(await storedOf(server.kvPath, "writer"), 9);

    // The bucket is REST's too: its next write is refused.
    const rest = await addressBook(server.httpUrl, caller).create(EXAMPLE_INPUT);
    assert.equal(rest.status, 429);
    await rest.body?.cancel();
    // As is a single GraphQL write, before it runs.
    const one = await answerOf(
      await graphql(server.httpUrl, {
        query: creations(1),
        variables: { input: EXAMPLE_INPUT },
      }, caller),
    );
    assert.equal(one.status, 429);
    assert.equal(one.body.errors[0].extensions.code, "rate-limited");
    assert.equal(await storedOf(server.kvPath, "writer"), 9);
  } finally {
    await server.close();
  }
});

Deno.test("GRAPHQL_MAX_MUTATIONS caps the writes of one operation, however they are spelled", async () => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  try {
    const refused = async (query: string) => {
      const answer = await answerOf(
        await graphql(server.httpUrl, { query, variables: { input: EXAMPLE_INPUT } }),
      );
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.data, undefined, query);
      return answer.body.errors;
    };
    const [error] = await refused(creations(11));
    assert.deepEqual(error.extensions, { code: "payload-too-large", limit: "mutations" });
    assert.match(error.message, /Mutation fields limit of 10 exceeded, found 11.*MAX_MUTATIONS/);
    // Through a fragment, an inline fragment and @skip, each field counts.
    const spread = `mutation ($input: AddressInput!) { ...Four ... on Mutation { ${
      Array.from({ length: 4 }, (_, i) => `i${i}: createAddress(input: $input) { id }`).join(" ")
    } } ${
      Array.from({ length: 3 }, (_, i) =>
        `s${i}: createAddress(input: $input) @skip(if: true) { id }`).join(" ")
    } } fragment Four on Mutation { ${
      Array.from({ length: 4 }, (_, i) => `f${i}: createAddress(input: $input) { id }`).join(" ")
    } }`;
    assert.equal((await refused(spread))[0].extensions.limit, "mutations");
    assert.equal(await storedOf(server.kvPath, ""), 0);
    // Ten writes are admitted; `__typename` is not a write.
    const ten = await answerOf(
      await graphql(server.httpUrl, {
        query: creations(10).replace("{ a0:", "{ __typename a0:"),
        variables: { input: EXAMPLE_INPUT },
      }),
    );
    assert.equal(ten.body.errors, undefined, ten.text);
    assert.equal(await storedOf(server.kvPath, ""), 10);
    // A bad value stops start-up with one line.
    assert.throws(() => loadConfig({ GRAPHQL_MAX_MUTATIONS: "0" }), /GRAPHQL_MAX_MUTATIONS/);
  } finally {
    await server.close();
  }
});

// Issue 35, item 2: `a0` was stored, but `{"data": null}` hid its id and etag.
Deno.test("a mutation that fails part-way answers what each field stored", async () => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  try {
    const answer = await answerOf(
      await graphql(server.httpUrl, {
        query: "mutation ($a: AddressInput!, $b: AddressInput!) { " +
          "a0: createAddress(input: $a) { id etag } " +
          'bad: deleteAddress(id: "987654321") ' +
          "a2: createAddress(input: $b) { id etag } }",
        variables: { a: taggedInput("a0"), b: taggedInput("a2") },
      }),
    );
    assert.equal(answer.status, 200);
    const { a0, bad, a2 } = answer.body.data;
    assert.equal(bad, null);
    assert.deepEqual(answer.body.errors.map((e: { path: string[] }) => e.path), [["bad"]]);
    assert.equal(answer.body.errors[0].extensions.code, "address-not-found");
    // Serial execution: the fields ran in order, each stored what it answered.
    assert.ok(Number(a2.id) > Number(a0.id));
    const rest = addressBook(server.httpUrl);
    for (const [field, tag] of [[a0, "a0"], [a2, "a2"]] as const) {
      const read = await answerOf(await rest.get(field.id));
      assert.equal(read.status, 200);
      assert.deepEqual(read.body, { id: Number(field.id), ...taggedInput(tag) });
      assert.equal(read.headers.get("etag"), field.etag);
    }
    // Under graphql-response+json too: a partial response is 200.
    const typed = await graphql(server.httpUrl, {
      query: 'mutation { d: deleteAddress(id: "987654321") ok: deleteAddress(id: ' +
        `"${a0.id}") }`,
    }, { accept: "application/graphql-response+json" });
    assert.equal(typed.status, 200);
    assert.deepEqual((await typed.json()).data, { d: null, ok: true });
  } finally {
    await server.close();
  }
});

/** One root field of a generated mutation: how it is written, and whether it runs. */
interface Spelled {
  how: "plain" | "fragment" | "inline" | "skipped" | "included" | "typename" | "repeat";
}

/** A mutation document of `fields`, each under its own alias, some through fragments. */
function mutationOf(fields: readonly Spelled[]): { query: string; writes: number; runs: number } {
  const root: string[] = [];
  const fragment: string[] = [];
  let writes = 0;
  let runs = 0;
  fields.forEach(({ how }, i) => {
    const create = `w${i}: createAddress(input: $input) { id }`;
    if (how === "typename") return void root.push(`t${i}: __typename`);
    if (how === "repeat") {
      // The same response key twice is one field, run once.
      root.push(create, create);
    } else if (how === "fragment") fragment.push(create);
    else if (how === "inline") root.push(`... on Mutation { ${create} }`);
    else if (how === "skipped") {
      root.push(create.replace("createAddress(input: $input)", "$& @skip(if: true)"));
    } else if (how === "included") {
      root.push(create.replace("createAddress(input: $input)", "$& @include(if: false)"));
    } else root.push(create);
    writes++;
    if (how !== "skipped" && how !== "included") runs++;
  });
  if (fragment.length > 0) root.push("...F");
  const variables = writes > 0 ? "($input: AddressInput!) " : "";
  const query = `mutation ${variables}{ __typename ${root.join(" ")} }` +
    (fragment.length > 0 ? ` fragment F on Mutation { ${fragment.join(" ")} }` : "");
  return { query, writes, runs };
}

// The class, not the instance: every spelling of a write (aliases, fragments, inline fragments,
// @skip and @include, a repeated key, meta fields) is charged as the route counts it, refused
// all or none, and capped. A clock that stands still makes the bucket exact; each run starts
// with a full one.
Deno.test("property: writes are charged as written, all or none, whatever their spelling", async () => {
  const dir = await Deno.makeTempDir({ prefix: "graphql-writes-" });
  const kvPath = `${dir}/kv.sqlite3`;
  const kv = await Deno.openKv(kvPath);
  const LIMIT = 8;
  const MAX = 10;
  let clock = 0;
  const store = await openStore(kv, { seedBooks: [], label: "test" });
  const config = loadConfig({ GRAPHQL_MAX_MUTATIONS: String(MAX) });
  const app = createApp({
    store,
    logger: createLogger({ write: () => {} }),
    maxBodyBytes: 65536,
    graphql: config.graphql,
  });
  const gate = createGate({
    booksRequired: false,
    verifier: undefined,
    limiter: createRateLimiter({ limit: LIMIT, windowSeconds: 60 }, { now: () => clock }),
  });
  const inner = (request: Request, admission: Parameters<typeof app.fetch>[1]) =>
    app.fetch(request, admission);
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    httpEntry({
      gate,
      router: app.router,
      logger: createLogger({ level: "silent" }),
      app: inner,
      refusals: createRefusals({ router: app.router, logger: createLogger({ level: "silent" }) }),
    }),
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  const how = fc.constantFrom<Spelled["how"]>(
    "plain",
    "fragment",
    "inline",
    "skipped",
    "included",
    "typename",
    "repeat",
  );
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.array(how.map((h) => ({ how: h })), { maxLength: 14 }),
        async (fields) => {
          clock += 60_000; // a full bucket
          const { query, writes, runs } = mutationOf(fields);
          const before = await storedOf(kvPath, "");
          const answer = await answerOf(
            await graphql(base, { query, variables: { input: EXAMPLE_INPUT } }),
          );
          const stored = (await storedOf(kvPath, "")) - before;
          if (writes > MAX) {
            assert.equal(answer.body.errors[0].extensions.limit, "mutations", answer.text);
            assert.equal(stored, 0);
            assert.equal(answer.headers.get("ratelimit"), `"default";r=${LIMIT - 1};t=8`);
          } else if (writes > LIMIT) {
            assert.equal(answer.status, 429, answer.text);
            assert.equal(answer.body.errors[0].extensions.code, "rate-limited");
            assert.equal(stored, 0);
          } else {
            assert.equal(answer.status, 200, answer.text);
            assert.equal(answer.body.errors, undefined, answer.text);
            assert.equal(stored, runs);
            // The request is one call when it writes nothing, else one per write.
            const left = LIMIT - Math.max(1, writes);
            assert.match(
              answer.headers.get("ratelimit") ?? "",
              new RegExp(`^"default";r=${left};`),
            );
          }
        },
      ),
      { numRuns: 60 },
    );
  } finally {
    await server.shutdown();
    kv.close();
    await Deno.remove(dir, { recursive: true });
  }
});
