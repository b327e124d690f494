/**
 * graphql/over_http.ts: the GraphQL-over-HTTP negotiation (response type, GraphiQL for
 * browsers), the request's Content-Type and the JSON parameters. The cases where its own parser
 * answered otherwise before lib/http/accept.ts are pinned with the old answer named.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { AppError } from "../../lib/errors.ts";
import {
  acceptsHtml,
  assertJsonRequest,
  exceedsUtf8Bytes,
  GRAPHQL_RESPONSE_JSON as GQL,
  isJsonRequest,
  negotiateGraphqlType,
  readParams,
} from "../../graphql/over_http.ts";

const JSON_TYPE = "application/json";

Deno.test("negotiateGraphqlType: graphql-response+json when preferred or named alike", () => {
  const cases: [string | undefined, string | undefined][] = [
    [undefined, JSON_TYPE],
    ["", JSON_TYPE],
    [JSON_TYPE, JSON_TYPE],
    ["application/json; charset=utf-8", JSON_TYPE],
    // The graphql-http audit: `*/*` is answered as application/json.
    ["*/*", JSON_TYPE],
    ["application/*", JSON_TYPE],
    [GQL, GQL],
    [`${GQL}; charset=utf-8`, GQL],
    // What graphql-http's client sends, and GraphQL-over-HTTP's recommended header.
    [`${GQL}, ${JSON_TYPE}`, GQL],
    [`${GQL}, ${JSON_TYPE};q=0.9`, GQL],
    [`${JSON_TYPE}, ${GQL}`, GQL],
    [`${GQL};q=0.5, ${JSON_TYPE}`, JSON_TYPE],
    [`${GQL}, */*`, GQL],
    [`${GQL};q=0.5, */*`, JSON_TYPE],
    [`*/*, ${JSON_TYPE}`, JSON_TYPE],
    [`${GQL};q=0, */*`, JSON_TYPE],
    ["text/xml", undefined],
    ["*/*;q=0", undefined],
    // Differences from the parser it replaced (old answer in the comment):
    ["application/json;q=0, */*", GQL], // old: json (the wildcard overrode the refusal)
    ["*/*;q=1, application/json;q=0.5", GQL], // old: json (q of the best of any json range)
    ["*/*;q=0.9, application/*;q=0", undefined], // old: json (the more specific range refuses)
    [`${GQL};q=2, ${JSON_TYPE};q=0.5`, JSON_TYPE], // old: graphql-response+json (q=2 counted)
  ];
  for (const [accept, expected] of cases) {
    assert.equal(negotiateGraphqlType(accept), expected, String(accept));
  }
});

Deno.test("acceptsHtml: text/html asked for by name or text/*, not only through */*", () => {
  const cases: [string | undefined, boolean][] = [
    [undefined, false],
    ["", false],
    ["*/*", false],
    [JSON_TYPE, false],
    ["text/html", true],
    ["Text/HTML", true],
    ["text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", true],
    ["text/html;q=0.5, application/json", true],
    ["text/html;q=0", false],
    ["text/html;q=0, */*", false],
    ["text/plain", false],
    // Differences from the parser it replaced (old answer in the comment):
    ["text/*", true], // old: false (only the exact text/html counted)
    ["text/html;Q=0", false], // old: true (an upper-case Q was not a weight)
  ];
  for (const [accept, expected] of cases) {
    assert.equal(acceptsHtml(accept), expected, String(accept));
  }
});

Deno.test("isJsonRequest: application/json, in UTF-8 when a charset is named", () => {
  const cases: [string | null | undefined, boolean][] = [
    [undefined, false],
    [null, false],
    ["", false],
    [JSON_TYPE, true],
    ["Application/JSON", true],
    ["application/json; charset=utf-8", true],
    ['application/json;charset="UTF-8"', true],
    ["application/json; charset=latin1", false],
    ["application/graphql", false],
    ["text/plain", false],
    ["application/json; boundary=x", false],
    // RFC 9110's grammar (lib/http/media_type.ts): an empty parameter is none; no whitespace
    // around "=".
    ["application/json;", true],
    ["application/json ;charset=utf-8;", true],
    ["application/json; charset = utf-8", false],
  ];
  for (const [type, expected] of cases) assert.equal(isJsonRequest(type), expected, String(type));
  assert.doesNotThrow(() => assertJsonRequest(JSON_TYPE));
  for (const type of [undefined, "text/plain", "x".repeat(500)]) {
    assert.throws(() => assertJsonRequest(type), (error) => {
      assert.ok(error instanceof AppError);
      assert.equal(error.status, 415);
      assert.ok(error.problems[0]!.detail.length < 250);
      return true;
    });
  }
});

Deno.test("readParams: the GraphQL parameters, or a 400 naming what is wrong", () => {
  assert.deepEqual(readParams('{"query":"{ books { title } }"}'), {
    query: "{ books { title } }",
    variables: undefined,
    operationName: undefined,
  });
  assert.deepEqual(
    readParams('{"query":"q","variables":{"a":1},"operationName":"Op","extensions":{}}'),
    { query: "q", variables: { a: 1 }, operationName: "Op" },
  );
  assert.deepEqual(readParams('{"query":"q","variables":null,"operationName":null}'), {
    query: "q",
    variables: undefined,
    operationName: undefined,
  });
  const refused: [string, string, RegExp][] = [
    ["", "invalid-body", /empty/],
    ["{", "invalid-body", /not valid JSON/],
    ["[]", "invalid-body", /an array/],
    ["null", "invalid-body", /null/],
    ["{}", "invalid-parameter", /no "query"/],
    ['{"query":1}', "invalid-parameter", /"query".*number/],
    ['{"query":"q","variables":[]}', "invalid-parameter", /"variables".*an array/],
    ['{"query":"q","variables":"{}"}', "invalid-parameter", /"variables".*string/],
    ['{"query":"q","operationName":1}', "invalid-parameter", /"operationName"/],
    ['{"query":"q","extensions":1}', "invalid-parameter", /"extensions"/],
  ];
  for (const [text, code, detail] of refused) {
    assert.throws(() => readParams(text), (error) => {
      assert.ok(error instanceof AppError, text);
      assert.equal(error.code, code, text);
      assert.equal(error.status, 400, text);
      assert.match(error.problems[0]!.detail, detail, text);
      return true;
    });
  }
});

Deno.test("property: exceedsUtf8Bytes agrees with the UTF-8 length", () => {
  const encoder = new TextEncoder();
  fc.assert(
    fc.property(fc.string({ unit: "grapheme", maxLength: 60 }), fc.nat(200), (text, max) => {
      return exceedsUtf8Bytes(text, max) === encoder.encode(text).byteLength > max;
    }),
    { numRuns: 2000 },
  );
});
