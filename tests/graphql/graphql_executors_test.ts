/**
 * The two executors of an operation give the same answer: graphql-js (`interpreted`, an
 * operation's first run) and graphql-jit (`compiled`, every later one; graphql/execute.ts). A
 * client sends the same request twice and must not see two answers, so every operation the fuzz
 * suite's document generator makes, and the address book's queries and mutations (partial
 * failures, aliases, fragments, directives, wrong arguments), run through both on the same data.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { type ExecutionResult, type GraphQLSchema, parse } from "graphql";
import { EXAMPLE_INPUT } from "../../lib/address.ts";
import { AppError } from "../../lib/errors.ts";
import { loadConfig } from "../../lib/config.ts";
import { compiled, interpreted, type Run } from "../../graphql/execute.ts";
import { createPreparer } from "../../graphql/prepare.ts";
import { booksRoot, createSchema } from "../../graphql/schema.ts";
import { openStore } from "../../store/store.ts";
import { PAGE_TOKEN_KEY } from "../../store/addresses/page_tokens.ts";
import { createBookStore } from "../../store/books.ts";
import { DEFAULT_BOOKS, readCatalogue } from "../../store/kv/open.ts";
import { document } from "../support/fuzz_graphql.ts";
import { taggedInput } from "../support/requests.ts";

/**
 * What a client reads of a result, as JSON: data, and each error's message, place and code. Two
 * stores in the same state version their writes apart, so each etag is named by the order in
 * which it first appears.
 */
function seen(result: ExecutionResult) {
  const etags = new Map<string, string>();
  const json = JSON.stringify({
    data: result.data,
    errors: result.errors?.map((error) => ({
      message: error.message,
      path: error.path,
      locations: error.locations,
      code: error.originalError instanceof AppError ? error.originalError.code : undefined,
    })),
  }, (key, value) => {
    if (key !== "etag" || typeof value !== "string") return value;
    if (!etags.has(value)) etags.set(value, `etag ${etags.size + 1}`);
    return etags.get(value);
  });
  return JSON.parse(json);
}

/** Both executors of the operation `operationName` selects in `query` (a valid document). */
function bothOf(schema: GraphQLSchema, query: string, operationName?: string) {
  const document = parse(query);
  const operation = document.definitions.find((d) =>
    d.kind === "OperationDefinition" &&
    (operationName === undefined || d.name?.value === operationName)
  );
  assert.ok(operation?.kind === "OperationDefinition", query);
  const jit = compiled(schema, document, operation);
  return { js: interpreted(schema, document, operationName), jit };
}

const schema = createSchema();
const catalogue = createBookStore(await readCatalogue(DEFAULT_BOOKS)).list();

const bookField = fc.constantFrom(
  "title",
  "year",
  "__typename",
  "t: title",
  "author { firstName lastName __typename }",
  "title @include(if: $flag)",
  "year @skip(if: $flag)",
  "author @skip(if: true) { lastName }",
  "author { lastName @include(if: $flag) }",
  "...F",
  "... on Book { year }",
  "... @include(if: $flag) { title }",
);
const rootField = fc.oneof(
  { weight: 5, arbitrary: fc.array(bookField, { minLength: 1, maxLength: 5 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      ["__typename"],
      ['__type(name: "Book") { name fields { name type { name kind ofType { name } } } }'],
      ["__schema { queryType { name } mutationType { fields { name } } }"],
    ),
  },
);

/** Valid documents of the books and meta fields, with variables, directives and fragments. */
const validDocument = fc.tuple(
  fc.array(fc.tuple(fc.boolean(), rootField), { minLength: 1, maxLength: 3 }),
  fc.constantFrom("($flag: Boolean!)", "($flag: Boolean = true)", "($flag: Boolean)"),
).map(([fields, head]) => {
  const selections = fields.map(([aliased, field], i) =>
    field[0]!.startsWith("__")
      ? field.join(" ")
      : `${aliased ? `b${i}: ` : ""}books { ${field.join(" ")} }`
  );
  const text = selections.join(" ");
  const usesFlag = text.includes("$flag");
  const fragment = text.includes("...F") ? " fragment F on Book { title author { lastName } }" : "";
  return `query Q${usesFlag ? head : ""} { ${text} }${fragment}`;
});

Deno.test("property: queries of the books answer the same through both executors", async () => {
  const prepare = createPreparer(schema, loadConfig({}).graphql);
  const variables = fc.constantFrom<Record<string, unknown> | undefined>(
    undefined,
    {},
    { flag: true },
    { flag: false },
    { flag: "yes" },
    { flag: null },
  );
  let compared = 0;
  await fc.assert(
    fc.asyncProperty(fc.oneof(validDocument, document), variables, async (query, values) => {
      const prepared = prepare(query);
      if (!prepared.ok) return;
      for (const name of [undefined, "Q", "Other"]) {
        const operation = prepared.operation(name);
        if (operation === undefined || operation.plan.operation.operation !== "query") continue;
        const { js, jit } = bothOf(schema, query, name);
        if (jit === undefined) continue;
        compared++;
        const root = booksRoot(catalogue);
        const expected = seen(await js(root, {}, values));
        assert.deepEqual(seen(await jit(root, {}, values)), expected, `${name}: ${query}`);
      }
    }),
    // Many runs compile nothing (an invalid document, a mutation): enough runs that the compiled
    // ones stay well above the floor below whatever the seed.
    { numRuns: 600 },
  );
  assert.ok(compared > 50, `only ${compared} operations were compiled`);
});

/** The page token key both stores share, so that a cursor is the same in both answers. */
const TOKEN_KEY = { v: 1, aes: new Uint8Array(32).fill(7) };

/** An address book on an in-memory KV with three addresses of the owner "o". */
async function addressBook() {
  const kv = await Deno.openKv(":memory:");
  // Opened once to lay the KV out, then again to read the shared key in place of its own.
  await openStore(kv, { seedBooks: [], label: "memory" });
  await kv.set(PAGE_TOKEN_KEY, TOKEN_KEY);
  const store = await openStore(kv, { seedBooks: [], label: "memory" });
  for (const tag of [1, 2, 3]) await store.addresses.create("o", taggedInput(tag));
  return { kv, context: { owner: "o", addresses: store.addresses } };
}

const FIELDS = "id name city postalCode etag";
const CASES: { query: string; variables?: Record<string, unknown> }[] = [
  { query: `{ address(id: 2) { ${FIELDS} } }` },
  { query: `{ a: address(id: "2") { id } b: address(id: 99) { id } c: address(id: 0) { id } }` },
  {
    query: `query ($n: Int) { addresses(first: $n) { edges { cursor node { ${FIELDS} } } ` +
      "pageInfo { hasNextPage endCursor } } }",
    variables: { n: 2 },
  },
  { query: "{ addresses(first: 0) { edges { cursor } } }" },
  { query: '{ addresses(after: "nope") { edges { cursor } } }' },
  {
    query: "{ addresses { edges { node { id name @skip(if: true) } } } ...F } " +
      "fragment F on Query { books { title } }",
  },
  {
    query: "mutation ($a: AddressInput!) { a0: createAddress(input: $a) { id etag } " +
      'bad: deleteAddress(id: "987654321") ' +
      `a2: createAddress(input: $a, idempotencyKey: "k") { ${FIELDS} } }`,
    variables: { a: EXAMPLE_INPUT },
  },
  {
    query: 'mutation ($id: ID!, $m: String) { updateAddress(id: $id, patch: { city: "X" }, ' +
      "ifMatch: $m) { city etag } d: deleteAddress(id: $id) again: deleteAddress(id: $id) }",
    variables: { id: "1", m: "*" },
  },
  {
    query: 'mutation { replaceAddress(id: 3, input: { name: "N", city: "C", ' +
      'postalCode: "P 1" }, ifMatch: "\\"stale\\"") { id } ok: replaceAddress(id: 3, input: ' +
      '{ name: "N", city: "C", postalCode: "P 1" }) { name city } }',
  },
  { query: 'mutation { createAddress(input: { name: " ", city: "C", postalCode: "!" }) { id } }' },
  { query: 'mutation { updateAddress(id: "x", patch: {}) { id } __typename }' },
  // Variables that do not coerce: nothing runs, and graphql-js's words in both.
  {
    query: "mutation ($a: AddressInput!) { createAddress(input: $a) { id } }",
    variables: { a: { name: 5 } },
  },
  { query: "query ($id: ID!) { address(id: $id) { id } }", variables: {} },
];

Deno.test("the address book's operations answer the same through both executors", async () => {
  for (const { query, variables } of CASES) {
    const { js, jit } = bothOf(schema, query);
    assert.ok(jit !== undefined, `not compiled: ${query}`);
    const answers = [];
    for (const run of [js, jit] as Run[]) {
      // Each on its own store in the same state: the same ids, and versionstamps too.
      const { kv, context } = await addressBook();
      try {
        answers.push(seen(await run(booksRoot(catalogue), context, variables)));
      } finally {
        kv.close();
      }
    }
    assert.deepEqual(answers[1], answers[0], query);
  }
});

// graphql-jit issue 230: an absent variable in an input object literal became null (which a merge
// patch reads as "remove"), where graphql-js leaves the field out.
Deno.test("an operation with a variable in a literal or a directive is left to graphql-js", async () => {
  const query = "mutation ($c: String) { updateAddress(id: 1, patch: { city: $c }) { city } }";
  const { js, jit } = bothOf(schema, query);
  assert.equal(jit, undefined);
  // So is one with a variable as a directive's argument.
  const flagged = "query ($f: Boolean) { books { title @include(if: $f) } }";
  assert.equal(bothOf(schema, flagged).jit, undefined);
  const { kv, context } = await addressBook();
  try {
    const result = await js(booksRoot(catalogue), context, {});
    assert.equal(result.errors, undefined, JSON.stringify(result.errors));
    assert.deepEqual(seen(result).data, { updateAddress: { city: taggedInput(1).city } });
  } finally {
    kv.close();
  }
});
