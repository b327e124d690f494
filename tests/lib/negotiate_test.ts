/**
 * lib/http/negotiate.ts: what the JSON resources (books, addresses, the entry point) offer and
 * which version a request is. The cases where the parser it had of its own answered otherwise
 * are pinned with the old answer named; the shortcut for the common headers is checked against
 * spellings of the same header that go through the parse.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { AppError } from "../../lib/errors.ts";
import {
  acceptableJson,
  addressResponseType,
  isVersion2,
  jsonHeaders,
  negotiateJson,
  VENDOR_JSON as V1,
  VENDOR_JSON_V2 as V2,
} from "../../lib/http/negotiate.ts";

const JSON_TYPE = "application/json";
const BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

Deno.test("acceptableJson: plain JSON unless a vendor type is asked for; none when refused", () => {
  const cases: [string | null | undefined, string | undefined][] = [
    [undefined, JSON_TYPE],
    [null, JSON_TYPE],
    ["", JSON_TYPE],
    ["*/*", JSON_TYPE],
    ["application/*", JSON_TYPE],
    [JSON_TYPE, JSON_TYPE],
    ["application/json; charset=utf-8", JSON_TYPE],
    [BROWSER, JSON_TYPE],
    [V1, V1],
    [V2, V2],
    [V1.toUpperCase(), V1],
    [`${V1}, */*`, V1],
    [`${V1}, ${JSON_TYPE}`, V1],
    [`${JSON_TYPE}, ${V1}`, V1],
    ["text/html, application/json;q=0.5", JSON_TYPE],
    // Problem documents are JSON: a client that reads them reads the resource.
    ["application/problem+json", JSON_TYPE],
    ["application/xml", undefined],
    ["text/html", undefined],
    ["application/json;q=0", undefined],
    ["*/*;q=0", undefined],
    // Differences from the parser it replaced (old answer in the comment):
    [`${JSON_TYPE}, ${V1};q=0.1`, JSON_TYPE], // old: v1 (a named vendor type won whatever its q)
    [`${V2}, ${V1}`, V1], // old: v2 (the first vendor type named)
    ["application/json;q=0, */*", V1], // old: json (a wildcard overrode the refusal)
    ["*/*;q=0.9, application/*;q=0", undefined], // old: json (the more specific range refuses)
    ["application/json;Q=0", undefined], // old: json (an upper-case Q was not a weight)
    ["application/json;q=abc", undefined], // old: json (a malformed weight counted as 1)
    ['text/plain;x="a,application/json,b"', undefined], // old: json (split inside a quoted string)
    ["application/json;q=0, application/problem+json", undefined], // old: json (refused)
  ];
  for (const [accept, expected] of cases) {
    assert.equal(acceptableJson(accept), expected, String(accept));
  }
});

Deno.test("acceptableJson for a v2 request: v2 unless Accept weighs it below another type", () => {
  const cases: [string | null | undefined, string | undefined][] = [
    [undefined, V2],
    ["", V2],
    ["*/*", V2],
    ["application/*", V2],
    [V2, V2],
    [JSON_TYPE, JSON_TYPE],
    [V1, V1],
    [`${JSON_TYPE}, */*`, V2],
    ["application/problem+json, */*", V2],
    ["application/problem+json", JSON_TYPE],
    ["text/html", undefined],
    // Differences from the parser it replaced (old answer in the comment):
    [`${V2};q=0, */*`, JSON_TYPE], // old: v2 (refused by name, then taken through */*)
    ["application/json, application/*;q=0.9", JSON_TYPE], // old: v2 (whatever the weights)
    [`application/*, ${V1}`, V2], // old: v1 (docs/http.md, Versions)
  ];
  for (const [accept, expected] of cases) {
    assert.equal(acceptableJson(accept, V2), expected, String(accept));
  }
});

Deno.test("the shortcut for the common headers answers as the same header spelled otherwise", () => {
  const spellings: [string | null | undefined, string[]][] = [
    [undefined, ["*/*;q=1", " */*", "*/*,", "*/*;q=1.000"]],
    [null, ["*/*;q=1"]],
    ["", ["*/*;q=1"]],
    ["*/*", ["*/*;q=1", " */*", "*/*,", "*/* ; q=1", "*/*;charset=utf-8"]],
    [JSON_TYPE, [
      "application/json;q=1",
      "Application/JSON",
      "application/json,",
      " application/json",
    ]],
    [V1, [`${V1};q=1`, V1.toUpperCase()]],
    [V2, [`${V2};q=1`, ` ${V2}`]],
  ];
  for (const [common, others] of spellings) {
    for (const prefer of [undefined, V2] as const) {
      const fast = acceptableJson(common, prefer);
      for (const other of others) {
        assert.equal(acceptableJson(other, prefer), fast, `${common} / ${other} / ${prefer}`);
      }
    }
  }
});

Deno.test("property: acceptableJson names a JSON type or none, and negotiateJson agrees", () => {
  const member = fc.tuple(
    fc.constantFrom(
      "*/*",
      "application/*",
      JSON_TYPE,
      V1,
      V2,
      "application/problem+json",
      "text/html",
      "text/*",
    ),
    fc.constantFrom("", ";q=0", ";q=0.5", ";q=1", ";charset=utf-8"),
  ).map(([range, param]) => range + param);
  const header = fc.oneof(
    fc.constantFrom(undefined, null, ""),
    fc.array(member, { minLength: 1, maxLength: 4 }).map((m) => m.join(", ")),
    fc.string({ maxLength: 30 }),
  );
  fc.assert(
    fc.property(header, fc.constantFrom(undefined, V2), (accept, prefer) => {
      const type = acceptableJson(accept, prefer);
      if (type === undefined) {
        assert.throws(() => negotiateJson(accept, prefer), (e) => e instanceof AppError);
        return true;
      }
      return [JSON_TYPE, V1, V2].includes(type) && negotiateJson(accept, prefer) === type;
    }),
    { numRuns: 1000 },
  );
});

Deno.test("negotiateJson refuses with 406 not-acceptable, naming a bounded Accept", () => {
  const accept = `text/html;x=${"y".repeat(500)}`;
  assert.throws(() => negotiateJson(accept), (error) => {
    assert.ok(error instanceof AppError);
    assert.equal(error.code, "not-acceptable");
    assert.equal(error.status, 406);
    assert.ok(error.problems[0]!.detail.includes(accept.slice(0, 100)));
    assert.ok(!error.problems[0]!.detail.includes(accept.slice(0, 101)));
    return true;
  });
});

Deno.test("isVersion2: the v2 type as Content-Type, or named and preferred in Accept", () => {
  const cases: [string | null | undefined, string | null | undefined, boolean][] = [
    [undefined, undefined, false],
    ["*/*", null, false],
    [JSON_TYPE, JSON_TYPE, false],
    [V1, null, false],
    [V2, null, true],
    [`${V2}, ${JSON_TYPE}`, null, true],
    [null, V2, true],
    [null, `${V2.toUpperCase()}; charset=utf-8`, true],
    [JSON_TYPE, V2, true],
    [`${V1}, ${V2}`, null, false],
    [`${V2};q=0.5, ${V1}`, null, false],
    [`${V2};q=0`, null, false],
    // Picked through a wildcard is not named: still version 1.
    ["*/*, application/json;q=0, application/vnd.books.v1+json;q=0", null, false],
    // Differences from the parser it replaced (old answer in the comment):
    [`${V1};q=0.5, ${V2}`, null, true], // old: false (the first vendor type named)
    [`${JSON_TYPE}, ${V2};q=0.9`, null, false], // old: true (whatever the weights)
    [`${V2};Q=0`, null, false], // old: true (an upper-case Q was not a weight)
  ];
  for (const [accept, contentType, expected] of cases) {
    assert.equal(isVersion2(accept, contentType), expected, `${accept} / ${contentType}`);
  }
});

Deno.test("addressResponseType: v2 for a v2 write unless Accept rules it out", () => {
  assert.equal(addressResponseType(undefined, V2), V2);
  assert.equal(addressResponseType("*/*", V2), V2);
  assert.equal(addressResponseType(JSON_TYPE, V2), JSON_TYPE);
  assert.equal(addressResponseType(undefined, JSON_TYPE), JSON_TYPE);
  assert.equal(addressResponseType(V2, JSON_TYPE), V2);
  assert.equal(addressResponseType(V1, undefined), V1);
  assert.throws(() => addressResponseType("text/html", V2), (e) => e instanceof AppError);
});

Deno.test("jsonHeaders: the type, Vary: Accept, the request id and nosniff", () => {
  assert.deepEqual(jsonHeaders(V1, "r-1"), {
    "content-type": V1,
    "vary": "Accept",
    "x-request-id": "r-1",
    "x-content-type-options": "nosniff",
  });
});
