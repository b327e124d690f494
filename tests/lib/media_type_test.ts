/**
 * lib/http/media_type.ts, the one reading of a Content-Type: RFC 9110's grammar, and every layer
 * that asks what a body is (REST writes, API versioning, GraphQL-over-HTTP, the gRPC listener's
 * answer to a call no service takes, tracing) classifying any spelling of a type as that reading
 * does. Before it, four rules disagreed: `application/json;` was JSON to REST and 415 to GraphQL;
 * `application/json ; charset=utf-8` was Connect's JSON to nothing but REST and GraphQL.
 */
import assert from "node:assert/strict";
import type { IncomingHttpHeaders } from "node:http";
import fc from "fast-check";
import { isBodyTypeFor, JSON_BODY_TYPES, MERGE_PATCH_JSON } from "../../lib/http/body.ts";
import { isGrpcMediaType, mediaTypeOf, parseMediaType } from "../../lib/http/media_type.ts";
import { isVersion2, VENDOR_JSON, VENDOR_JSON_V2 } from "../../lib/http/negotiate.ts";
import { rpcSystemOf } from "../../lib/tracing.ts";
import { isJsonRequest } from "../../graphql/over_http.ts";
import { unknownMethod } from "../../rpc/connect/unknown_method.ts";

Deno.test("mediaTypeOf: the lower-cased type/subtype without parameters, or none", () => {
  const cases: [string | null | undefined, string | undefined][] = [
    [undefined, undefined],
    [null, undefined],
    ["", undefined],
    ["application/json", "application/json"],
    ["Application/JSON; charset=utf-8;;", "application/json"],
    [" text/plain ", "text/plain"],
    ["application/json;", "application/json"],
    ["application/json ; charset=utf-8", "application/json"],
    [`${VENDOR_JSON_V2}; version=2`, VENDOR_JSON_V2],
    // Parameters that do not parse leave the type known.
    ["application/json; charset = utf-8", "application/json"],
    ["json", undefined],
    ["application/", undefined],
    ["/json", undefined],
    ["application /json", undefined],
    ["application/json, text/plain", undefined],
    ["application/json/x", undefined],
    ["appl\u00efcation/json", undefined],
  ];
  for (const [value, expected] of cases) assert.equal(mediaTypeOf(value), expected, String(value));
});

Deno.test("parseMediaType: parameters by RFC 9110, names lower-cased, quoted values unquoted", () => {
  const cases: [string, [string, string][] | undefined][] = [
    ["a/b", []],
    ["a/b;", []],
    ["a/b ;; ", []],
    ["a/b; Charset=UTF-8", [["charset", "UTF-8"]]],
    ['a/b;charset="utf-8"', [["charset", "utf-8"]]],
    ['a/b; x="semi;colon \\"quoted\\""; y=1', [["x", 'semi;colon "quoted"'], ["y", "1"]]],
    ["a/b\t;\tx=1\t;y=2", [["x", "1"], ["y", "2"]]],
    // No whitespace around "=", a value is a token or a quoted string, a name is a token.
    ["a/b; x = 1", undefined],
    ["a/b; x=", undefined],
    ["a/b; x", undefined],
    ['a/b; x="unterminated', undefined],
    ["a/b; x=1 2", undefined],
    ["a/b; =1", undefined],
    ["a/b; x=1, c/d", undefined],
  ];
  for (const [value, parameters] of cases) {
    assert.deepEqual(parseMediaType(value), { type: "a/b", parameters }, value);
  }
});

// Types each layer tells apart, and near misses.
const TYPES = [
  "application/json",
  VENDOR_JSON,
  VENDOR_JSON_V2,
  MERGE_PATCH_JSON,
  "application/jsonx",
  "text/json",
  "application/proto",
  "application/connect+json",
  "application/connect+proto",
  "application/grpc",
  "application/grpc+proto",
  "application/grpc+json",
  "application/grpc-web",
  "application/grpc-web+proto",
  "application/grpc-web-text+proto",
  "application/grpcx",
  "text/plain",
];

const PARAMETERS = [
  "charset=utf-8",
  'charset="UTF-8"',
  "charset=latin1",
  "q=1",
  'x="a;b"',
  "charset = utf-8",
  "a b",
  "=",
  '"',
  ",",
  "",
];

const ows = fc.constantFrom("", " ", "\t", "  ");

/** A spelling of a type: any letter case, whitespace, well-formed and malformed parameters. */
const spelling = fc.tuple(
  fc.constantFrom(...TYPES),
  fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
  ows,
  fc.array(fc.tuple(ows, ows, fc.constantFrom(...PARAMETERS)), { maxLength: 3 }),
  ows,
).map(([type, upper, lead, parameters, trail]) => {
  const cased = [...type].map((c, i) => upper[i] ? c.toUpperCase() : c).join("");
  return lead + cased + parameters.map(([a, b, p]) => `${a};${b}${p}`).join("") + trail;
});

/** The protocol the gRPC listener answers a call no service takes in. */
function rpcAnswerOf(contentType: string | undefined): string {
  const headers: IncomingHttpHeaders = contentType === undefined
    ? {}
    : { "content-type": contentType };
  let answered = "";
  unknownMethod({ url: "/x.Y/z", headers }, {
    writeHead(status: number, fields: Record<string, string>) {
      answered = fields["grpc-status"] !== undefined
        ? "grpc"
        : fields["content-type"] === "application/json"
        ? "connect"
        : `plain ${status}`;
    },
    end() {},
  });
  return answered;
}

Deno.test("property: every layer reads a Content-Type's type as mediaTypeOf does", () => {
  fc.assert(
    fc.property(spelling, (value) => {
      const type = mediaTypeOf(value);
      const parameters = parseMediaType(value)?.parameters;
      assert.equal(isBodyTypeFor("POST", value), JSON_BODY_TYPES.includes(type ?? ""), "REST");
      assert.equal(isBodyTypeFor("PATCH", value), type === MERGE_PATCH_JSON, "REST PATCH");
      assert.equal(isVersion2(undefined, value), type === VENDOR_JSON_V2, "version");
      // GraphQL judges a charset besides the type; without parameters, the type alone decides.
      if (isJsonRequest(value)) assert.equal(type, "application/json", "GraphQL");
      if (parameters?.length === 0) {
        assert.equal(isJsonRequest(value), type === "application/json", "GraphQL");
      }
      assert.equal(rpcAnswerOf(value), rpcAnswerOf(type), "gRPC listener");
      assert.equal(rpcSystemOf(value) === "grpc", isGrpcMediaType(type), "tracing");
      assert.equal(rpcAnswerOf(value) === "grpc", isGrpcMediaType(type), "gRPC listener");
    }),
    { numRuns: 2000 },
  );
});
