/**
 * Generators of GraphQL requests for the fuzz suite: documents built from the schema (fields,
 * aliases, fragments, directives, variables, introspection) and mutations of them (unknown
 * fields, fragment cycles, wrongly typed variables, huge strings, character edits), wrapped in
 * random JSON envelopes with random content types.
 */
import fc from "fast-check";
import { headerText, nastyString, prototypeName } from "./fuzz.ts";

/** One GraphQL request over HTTP. */
export interface GraphqlCase {
  method: "POST" | "GET";
  /** Path and query (a GET carries the document in the query). */
  path: string;
  headers: Record<string, string>;
  body?: string;
}

const authorField = fc.constantFrom(
  "firstName",
  "lastName",
  "__typename",
  "middleName",
  "firstName @skip(if: true)",
  "a1: lastName",
);

const authorSelection = fc.array(authorField, { minLength: 0, maxLength: 4 }).map((f) =>
  `{ ${f.join(" ")} }`
);

const bookField: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom("title", "year", "__typename", "id", "isbn", 'title(lang: "de")'),
  },
  { weight: 3, arbitrary: authorSelection.map((s) => `author ${s}`) },
  { weight: 1, arbitrary: fc.constant("author") },
  {
    weight: 2,
    arbitrary: fc.tuple(
      fc.constantFrom("title", "year", "author { lastName }"),
      fc.constantFrom(
        "@include(if: $flag)",
        "@skip(if: $flag)",
        "@include(if: true)",
        '@skip(if: "yes")',
        "@include",
        "@unknown",
        "@deprecated",
        "@include(if: true) @include(if: false)",
      ),
    ).map(([f, d]) => `${f} ${d}`),
  },
  {
    weight: 2,
    arbitrary: fc.tuple(
      fc.stringMatching(/^[a-z_][a-zA-Z0-9_]{0,8}$/),
      fc.constantFrom("title", "year"),
    )
      .map(([a, f]) => `${a}: ${f}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "...F",
      "...G",
      "... on Book { year }",
      "... on Author { lastName }",
    ),
  },
);

const bookSelection = fc.array(bookField, { minLength: 0, maxLength: 6 }).map((f) =>
  `{ ${f.join(" ")} }`
);

/** Introspection nested `depth` levels: how a client gets past the depth limit legitimately. */
const deepIntrospection = fc.integer({ min: 1, max: 16 }).map((depth) =>
  `__schema { types { name fields { type ${"{ ofType ".repeat(depth)}{ name }${
    " }".repeat(depth)
  } } } }`
);

const rootField: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: bookSelection.map((s) => `books ${s}`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom("books", "__typename", "addresses { id }", "books(id: 1) { title }"),
  },
  { weight: 1, arbitrary: deepIntrospection },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 0, max: 70_000 }).map((n) =>
      `__type(name: "${"x".repeat(n)}") { name }`
    ),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 2, max: 60 }).map((n) =>
      Array.from({ length: n }, (_, i) => `a${i}: books { title }`).join(" ")
    ),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 80 }).map((n) =>
      `books { title ${"@skip(if: false) ".repeat(n)}}`
    ),
  },
);

const fragments = fc.constantFrom(
  "",
  "",
  "fragment F on Book { title }",
  "fragment F on Book { title ...G } fragment G on Book { year ...F }",
  "fragment F on Book { ...F }",
  "fragment F on Author { lastName }",
  "fragment F on Book { title } fragment F on Book { year }",
  "fragment G on Nope { x }",
);

const operationHead = fc.constantFrom(
  "",
  "query",
  "query Q",
  "query Q($flag: Boolean)",
  "query Q($flag: Boolean!)",
  "query Q($flag: Boolean = true)",
  "query Q($flag: String)",
  "query Q($flag: Boolean, $flag: Int)",
  "query Q($x: Nope)",
  "mutation",
  "subscription S",
  "query Q @include(if: true)",
);

/** A document built from the schema, mostly valid, sometimes not. */
export const document: fc.Arbitrary<string> = fc.tuple(
  operationHead,
  fc.array(rootField, { minLength: 1, maxLength: 3 }),
  fragments,
  fc.boolean(),
).map(([head, fields, frags, second]) =>
  `${head} { ${fields.join(" ")} } ${frags}${second ? " query Other { books { year } }" : ""}`
);

const editChar = fc.constantFrom(
  "{",
  "}",
  "(",
  ")",
  "$",
  "@",
  ".",
  ":",
  "!",
  '"',
  "#",
  "\\",
  "\u0000",
  "…",
  "\ud800",
);

/** A document with a few character edits: deletions, insertions, duplications. */
const mutatedDocument: fc.Arbitrary<string> = fc.tuple(
  document,
  fc.array(fc.tuple(fc.nat(), fc.constantFrom("delete", "insert", "duplicate"), editChar), {
    minLength: 1,
    maxLength: 4,
  }),
).map(([doc, edits]) => {
  let text = doc;
  for (const [at, kind, ch] of edits) {
    const i = text.length === 0 ? 0 : at % text.length;
    if (kind === "delete") text = text.slice(0, i) + text.slice(i + 1);
    else if (kind === "insert") text = text.slice(0, i) + ch + text.slice(i);
    else text = text.slice(0, i) + text.slice(i, i + 20) + text.slice(i);
  }
  return text;
});

const variables = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  {
    weight: 3,
    arbitrary: fc.record({
      flag: fc.oneof(fc.boolean(), fc.constantFrom("true", 1, null, [], {}, 1e400)),
      x: fc.jsonValue({ maxDepth: 2 }),
    }, { requiredKeys: [] }),
  },
  { weight: 1, arbitrary: fc.constantFrom(null, "{}", "x", [], 1, true) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  // Variables named like members of Object.prototype (`{"constructor": 1, "__proto__": {}}`).
  {
    weight: 1,
    arbitrary: fc.dictionary(prototypeName, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
  },
);

/** The JSON body: `{query, variables, operationName, extensions}`, each perhaps wrong. */
const envelope: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      query: fc.oneof(
        { weight: 5, arbitrary: document },
        { weight: 3, arbitrary: mutatedDocument },
        { weight: 1, arbitrary: fc.constantFrom(null, 1, [], {}, "", " ", "{}") },
        { weight: 1, arbitrary: nastyString(50) },
      ),
      variables,
      operationName: fc.oneof(
        fc.constant(undefined),
        fc.constantFrom("Q", "Other", "S", "Nope", "", null, 1, []),
        prototypeName,
        nastyString(20),
      ),
      extensions: fc.oneof(fc.constant(undefined), fc.jsonValue({ maxDepth: 2 })),
      documentId: fc.constantFrom(undefined, "abc"),
    }, { requiredKeys: ["query"] }).map((e) => JSON.stringify(e)),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "",
      "{",
      "null",
      '{"query":"{ books { title } }","query":"{ x }"}',
      '\ufeff{"query":"{ books { title } }"}',
      '{"query":"\\ud800"}',
      "query { books { title } }",
    ),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 60_000, max: 120_000 }).map((n) =>
      JSON.stringify({ query: `{ books { title } } # ${"x".repeat(n)}` })
    ),
  },
);

const contentType = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      "application/json",
      "application/json; charset=utf-8",
      "Application/JSON;charset=UTF-8",
      "application/json;;",
      "application/json; charset=latin1",
      "application/graphql-response+json",
    ),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "application/graphql",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/foo+json",
      "",
    ),
  },
  { weight: 1, arbitrary: headerText(40) },
);

const accept = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.constantFrom(
      "application/json",
      "application/graphql-response+json",
      "application/graphql-response+json, application/json;q=0.9",
      "*/*",
      "application/*",
    ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "text/html",
      "image/png",
      "application/json;q=0",
      "",
      "application/xml",
    ),
  },
  { weight: 1, arbitrary: headerText(40) },
);

/** A GraphQL request: mostly POST with a JSON envelope, sometimes a GET with a query string. */
export const graphqlCase: fc.Arbitrary<GraphqlCase> = fc.record({
  get: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  envelope,
  doc: document,
  contentType,
  accept,
  requestId: fc.option(fc.uuid().map(String), { nil: undefined }),
  language: fc.option(fc.oneof(fc.constantFrom("de", "en", "fr;q=0.5"), prototypeName), {
    nil: undefined,
  }),
}).map(({ get, envelope, doc, contentType, accept, requestId, language }) => {
  const headers: Record<string, string> = { accept };
  if (requestId) headers["x-request-id"] = requestId;
  if (language) headers["accept-language"] = language;
  const query = encodeURIComponent(doc);
  // fetch refuses URLs past 64 KiB; the HTTP layer refuses heads past about that too.
  if (get && query.length < 30_000) {
    return { method: "GET", path: `/graphql?query=${query}`, headers };
  }
  headers["content-type"] = contentType;
  return { method: "POST", path: "/graphql", headers, body: envelope };
});
