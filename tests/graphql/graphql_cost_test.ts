/**
 * The cost limit sees a page the same whichever way its size is written (a literal `first: 50`,
 * or `first: $n` with n = 50), admits every page REST admits with every field, and the cost
 * figures docs/graphql.md gives are the rule's own (they move when a field is added).
 */
import assert from "node:assert/strict";
import { type DocumentNode, parse } from "graphql";
import * as typed from "../../clients/gen/graphql.ts";
import { ADDRESS_FIELD_NAMES } from "../../lib/address.ts";
import { loadConfig } from "../../lib/config.ts";
import { documentCosts } from "../../graphql/limits.ts";
import { createSchema } from "../../graphql/schema.ts";
import { addressBook, answerOf, graphql, taggedInput } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";

/** Every field of an address as GraphQL answers it. */
const NODE = `id ${ADDRESS_FIELD_NAMES.join(" ")} etag`;

/** A page of every field, its size written as `first`. */
function pageQuery(first: string): string {
  return `{ addresses(first: ${first}) { edges { cursor node { ${NODE} } } ` +
    "pageInfo { hasNextPage endCursor } } }";
}

Deno.test("a page size costs the same as a literal and as a variable; REST's pages pass", async () => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  try {
    const rest = addressBook(server.httpUrl);
    for (let i = 0; i < 60; i += 20) {
      await Promise.all(
        Array.from({ length: 20 }, async (_, j) => {
          const res = await rest.create(taggedInput(i + j));
          assert.equal(res.status, 201);
          await res.body?.cancel();
        }),
      );
    }
    // Issue 35: the literal page was "Query Cost limit of 1000 exceeded, found 1525".
    const literal = await answerOf(await graphql(server.httpUrl, { query: pageQuery("50") }));
    const variable = await answerOf(
      await graphql(server.httpUrl, {
        query: `query ($n: Int) ${pageQuery("$n")}`,
        variables: { n: 50 },
      }),
    );
    assert.equal(literal.status, 200);
    assert.equal(literal.body.errors, undefined, literal.text);
    assert.equal(literal.body.data.addresses.edges.length, 50);
    assert.equal(literal.text, variable.text);
    // The largest page REST serves (limit=500), every field, written as a literal.
    const largest = await answerOf(await graphql(server.httpUrl, { query: pageQuery("500") }));
    assert.equal(largest.body.errors, undefined, largest.text);
    assert.equal(largest.body.data.addresses.edges.length, 60);
    // The worst case stays bounded: aliased pages share one page of 500, literal or not.
    const aliases = `{ ${
      Array.from({ length: 11 }, (_, i) => `p${i}: ${pageQuery("50").slice(2, -2)}`).join(" ")
    } }`;
    const over = await answerOf(await graphql(server.httpUrl, { query: aliases }));
    assert.equal(over.body.data, undefined);
    assert.match(over.body.errors[0].message, /at most 500 addresses together.*asks for 550/);
  } finally {
    await server.close();
  }
});

Deno.test("the cost rule: a page's size never multiplies; everything else is armor's formula", () => {
  const schema = createSchema();
  const cost = (query: string) => documentCosts(schema, parse(query));
  const [fifty] = cost(pageQuery("50"));
  assert.deepEqual(cost(pageQuery("500")), [fifty]);
  assert.deepEqual(cost(`query ($n: Int) ${pageQuery("$n")}`), [fifty]);
  // Through a fragment too.
  assert.deepEqual(
    cost(`{ ...P } fragment P on Query ${pageQuery("500").slice(0, -2)} }`),
    cost(`{ ...P } fragment P on Query ${pageQuery("5").slice(0, -2)} }`),
  );
  // Nested selections still cost by depth: within every other limit, over the cost.
  const books = "books { title year author { firstName lastName } }";
  const aliased = `{ ${Array.from({ length: 30 }, (_, i) => `b${i}: ${books}`).join(" ")} }`;
  assert.ok(cost(aliased)[0]! < loadConfig({}).graphql.maxCost);
});

/** The rows of docs/graphql.md's cost table: the operations named, and the cost stated. */
async function documentedCosts(): Promise<[string[], number][]> {
  const text = await Deno.readTextFile(new URL("../../docs/graphql.md", import.meta.url));
  const table = text.split("<!-- cost table -->")[1];
  assert.ok(table !== undefined, "docs/graphql.md has no cost table");
  const rows: [string[], number][] = [];
  for (const line of table.trimStart().split("\n")) {
    if (!line.startsWith("|")) break;
    const match = /^\| (.+?) +\| +(\d+) \|$/.exec(line);
    if (match === null) continue; // the header and its rule
    // What a cell says in parentheses is a remark, not a name.
    const names = match[1]!.replace(/ \(.*\)$/, "");
    const named = [...names.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    rows.push([named, Number(match[2])]);
  }
  return rows;
}

// Issue 35, item 14: the figures went stale when a field was added. Each row names typed
// documents (clients/gen/graphql.ts) or a query, and states what the rule computes for them.
Deno.test("docs/graphql.md states the cost of each typed document as the rule computes it", async () => {
  const schema = createSchema();
  const rows = await documentedCosts();
  const covered = new Set<string>();
  for (const [named, stated] of rows) {
    for (const name of named) {
      const document: DocumentNode | undefined = name.startsWith("{")
        ? parse(name)
        : (typed as Record<string, unknown>)[`${name}Document`] as DocumentNode | undefined;
      assert.ok(document !== undefined, `no typed document ${name}`);
      assert.deepEqual(documentCosts(schema, document), [stated], `${name} costs`);
      covered.add(name);
    }
  }
  for (const name of Object.keys(typed).filter((n) => n.endsWith("Document"))) {
    assert.ok(covered.has(name.slice(0, -"Document".length)), `the table leaves out ${name}`);
  }
});
