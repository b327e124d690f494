/**
 * lib/http/accept.ts, the one reader of `Accept` and `Accept-Language`: how it parses a header
 * (RFC 9110 12.5.1), how it picks among a resource's offers, its RFC 4647 lookup, and the
 * answers of the resources that declare their offers through it (the export's form, the error
 * body, the message language). Where the parsers it replaced disagreed, the RFC's answer is
 * pinned here with the old answer named.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { Hono } from "hono";
import {
  acceptance,
  type MediaRange,
  parseAccept,
  parseAcceptLanguage,
  pickMediaType,
  preferredLanguage,
  preferredMediaType,
} from "../../lib/http/accept.ts";
import { AppError, negotiateLanguage } from "../../lib/errors.ts";
import type { AppEnv } from "../../lib/http/hono_env.ts";
import { exportType } from "../../routes/owner_data.ts";
import { renderAppError } from "../../server/render_error.ts";

type Expected = Pick<MediaRange, "range" | "q"> & { params?: [string, string][] };

function simple(ranges: readonly MediaRange[]): Expected[] {
  return ranges.map(({ range, q, params }) =>
    params.length === 0 ? { range, q } : { range, q, params: params.map(([k, v]) => [k, v]) }
  );
}

Deno.test("parseAccept reads ranges, weights and parameters as RFC 9110 writes them", () => {
  const cases: [string, Expected[]][] = [
    ["application/json", [{ range: "application/json", q: 1 }]],
    ["*/*", [{ range: "*/*", q: 1 }]],
    [
      "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
      [
        { range: "text/html", q: 1 },
        { range: "application/xhtml+xml", q: 1 },
        { range: "application/xml", q: 0.9 },
        { range: "*/*", q: 0.8 },
      ],
    ],
    // Type, subtype and parameter names are case-insensitive; so is the `q` of the weight.
    ["Application/JSON;Q=0.5", [{ range: "application/json", q: 0.5 }]],
    // Whitespace around members, `;` and `=`; empty parameters and empty members.
    [
      " text/plain ; q=0.5 ,, application/json;;; ,",
      [{ range: "text/plain", q: 0.5 }, { range: "application/json", q: 1 }],
    ],
    // Parameters before the weight are kept; what follows the weight is an extension.
    [
      "text/html;level=1;q=0.7;ext=1",
      [{ range: "text/html", q: 0.7, params: [["level", "1"]] }],
    ],
    // A quoted string may hold `,` and `;`, and escape a quote.
    [
      'application/json;profile="a,b;c", text/plain;x="a \\" b, c", text/html',
      [
        { range: "application/json", q: 1, params: [["profile", "a,b;c"]] },
        { range: "text/plain", q: 1, params: [["x", 'a " b, c']] },
        { range: "text/html", q: 1 },
      ],
    ],
    // Every qvalue the grammar allows (and more than three decimals).
    [
      "a/a;q=0, b/b;q=0., c/c;q=0.000, d/d;q=1, e/e;q=1.000, f/f;q=0.5555",
      [
        { range: "a/a", q: 0 },
        { range: "b/b", q: 0 },
        { range: "c/c", q: 0 },
        { range: "d/d", q: 1 },
        { range: "e/e", q: 1 },
        { range: "f/f", q: 0.5555 },
      ],
    ],
  ];
  for (const [header, expected] of cases) {
    assert.deepEqual(simple(parseAccept(header)), expected, header);
  }
});

Deno.test("parseAccept drops the members that do not parse, and only those", () => {
  const dropped = [
    "",
    ",,,",
    ";q=1",
    "json",
    "application/",
    "/json",
    "*/json",
    "application/json/x",
    "text /html",
    "téxt/html",
    "application/json;q=abc",
    "application/json;q=",
    "application/json;q=2",
    "application/json;q=1.5",
    "application/json;q=-1",
    "application/json;q=.5",
    "application/json;q=0.5x",
    'application/json;q="0.5"',
  ];
  for (const member of dropped) {
    assert.deepEqual(simple(parseAccept(member)), [], member);
    assert.deepEqual(
      simple(parseAccept(`text/plain, ${member}, text/html;q=0.1`)),
      [{ range: "text/plain", q: 1 }, { range: "text/html", q: 0.1 }],
      member,
    );
  }
});

Deno.test("parseAccept answers a repeated header from its memo, with ranges nobody can change", () => {
  const header = "text/html;level=1, application/json;q=0.5";
  const first = parseAccept(header);
  assert.equal(parseAccept(header), first);
  assert.ok(
    Object.isFrozen(first) && Object.isFrozen(first[0]) && Object.isFrozen(first[0]!.params),
  );
  assert.throws(() => (first as MediaRange[]).push(first[0]!), TypeError);
  // Long headers are not kept, and still parse.
  const long = `${"x".repeat(300)}/y, application/json`;
  assert.notEqual(parseAccept(long), parseAccept(long));
  assert.deepEqual(simple(parseAccept(long)).at(-1), { range: "application/json", q: 1 });
});

Deno.test("acceptance: the most specific range that matches a type decides its weight", () => {
  const cases: [string | undefined, string, { q: number; specificity: number }][] = [
    [undefined, "text/html", { q: 1, specificity: 0 }],
    ["", "text/html", { q: 1, specificity: 0 }],
    ["*/*;q=0.1", "text/html", { q: 0.1, specificity: 0 }],
    ["*/*;q=0.1, text/*;q=0.5", "text/html", { q: 0.5, specificity: 1 }],
    ["*/*;q=0.1, text/*;q=0.5, text/html;q=0", "text/html", { q: 0, specificity: 2 }],
    // RFC 9110 12.5.1's own example.
    ["text/*;q=0.3, text/plain;q=0.7, text/plain;format=flowed, */*;q=0.5", "text/plain", {
      q: 1,
      specificity: 2,
    }],
    ["text/*;q=0.3, text/plain;q=0.7, */*;q=0.5", "text/plain", { q: 0.7, specificity: 2 }],
    ["text/*;q=0.3, text/plain;q=0.7, */*;q=0.5", "text/html", { q: 0.3, specificity: 1 }],
    ["text/*;q=0.3, text/plain;q=0.7, */*;q=0.5", "image/jpeg", { q: 0.5, specificity: 0 }],
    // Equally specific ranges: the highest weight.
    ["a/b;q=0.2, a/b;q=0.7, a/b;q=0", "a/b", { q: 0.7, specificity: 2 }],
    ["text/plain", "text/html", { q: 0, specificity: -1 }],
    ["text/*", "texts/html", { q: 0, specificity: -1 }],
    ["application/*", "application", { q: 0, specificity: -1 }],
  ];
  for (const [header, type, expected] of cases) {
    assert.deepEqual(acceptance(header, type), expected, `${header} ${type}`);
  }
});

const SPECIAL = "application/special+json";
const PLAIN = "application/json";

Deno.test("preferredMediaType: weight first; then the more specific range, the default, the order", () => {
  const offers = [SPECIAL, PLAIN];
  const cases: [string | null | undefined, string | undefined][] = [
    [undefined, PLAIN],
    [null, PLAIN],
    ["", PLAIN],
    ["*/*", PLAIN],
    ["application/*", PLAIN],
    [SPECIAL, SPECIAL],
    [PLAIN, PLAIN],
    [`${SPECIAL};q=0.5, ${PLAIN}`, PLAIN],
    [`${SPECIAL}, ${PLAIN};q=0.5`, SPECIAL],
    // Named alike: the resource's order, whatever the client's order.
    [`${SPECIAL}, ${PLAIN}`, SPECIAL],
    [`${PLAIN}, ${SPECIAL}`, SPECIAL],
    // Named beats reached through a wildcard.
    [`${SPECIAL}, */*`, SPECIAL],
    [`*/*, ${PLAIN}`, PLAIN],
    [`${SPECIAL}, application/*`, SPECIAL],
    // A refused default leaves the other offer.
    [`${PLAIN};q=0, */*`, SPECIAL],
    [`*/*;q=0.9, ${SPECIAL};q=0`, PLAIN],
    // Nothing acceptable.
    ["text/html", undefined],
    ["*/*;q=0", undefined],
    [`*/*;q=0.9, application/*;q=0`, undefined],
    [",,,", undefined],
    ["application/json;q=abc", undefined],
  ];
  for (const [header, expected] of cases) {
    assert.equal(preferredMediaType(header, offers, PLAIN), expected, String(header));
    if (header) assert.equal(pickMediaType(parseAccept(header), offers, PLAIN), expected, header);
  }
  // The same list with another default: not the answer kept for the first.
  assert.equal(preferredMediaType("application/*", offers, PLAIN), PLAIN);
  assert.equal(preferredMediaType("application/*", offers, SPECIAL), SPECIAL);
  assert.equal(preferredMediaType("application/*", offers, PLAIN), PLAIN);
  // Without a named default, the first offer is the default.
  assert.equal(preferredMediaType("*/*", [PLAIN, SPECIAL]), PLAIN);
  assert.equal(preferredMediaType("*/*", [SPECIAL, PLAIN]), SPECIAL);
});

const TYPES = [
  "application/json",
  "application/problem+json",
  "application/vnd.books.v1+json",
  "application/vnd.books.v2+json",
  "application/graphql-response+json",
  "application/x-ndjson",
  "text/html",
  "text/plain",
];
const member = fc.tuple(
  fc.oneof(
    fc.constantFrom(...TYPES, "*/*", "application/*", "text/*", "image/*"),
    fc.stringMatching(/^[a-z]{1,3}\/[a-z*]{1,3}$/),
  ),
  fc.constantFrom("", ";q=0", ";q=1", ";q=0.5", ";q=0.25", ";charset=utf-8", ';p="a,b"', ";q=abc"),
).map(([range, param]) => range + param);
const acceptHeader = fc.oneof(
  fc.constantFrom(undefined, "", "*/*", ...TYPES),
  fc.array(member, { minLength: 1, maxLength: 5 }).map((members) => members.join(", ")),
  fc.string({ maxLength: 40 }),
);
const offerList = fc.uniqueArray(fc.constantFrom(...TYPES), { minLength: 1, maxLength: 4 });

Deno.test("property: the choice is an offer weighed highest, or none when every offer weighs 0", () => {
  fc.assert(
    fc.property(acceptHeader, offerList, fc.nat(), (header, offers, i) => {
      const fallback = offers[i % offers.length]!;
      const chosen = preferredMediaType(header, offers, fallback);
      const best = Math.max(...offers.map((offer) => acceptance(header, offer).q));
      if (best === 0) return chosen === undefined;
      return chosen !== undefined && offers.includes(chosen) &&
        acceptance(header, chosen).q === best;
    }),
    { numRuns: 2000 },
  );
});

// Constant lists, as resources pass them: their answers are kept, and must stay right.
const CONSTANT_LISTS = [TYPES.slice(0, 3), TYPES.slice(3), [TYPES[6]!, TYPES[0]!]];

Deno.test("property: the shortcut and the kept answers are the parse's answers", () => {
  fc.assert(
    fc.property(
      fc.oneof(offerList, fc.constantFrom(...CONSTANT_LISTS)),
      fc.array(acceptHeader, { minLength: 1, maxLength: 6 }),
      fc.nat(),
      (offers, headers, i) => {
        const fallback = offers[i % offers.length]!;
        // Each header twice: the second answer may come from what the first one kept.
        return [...headers, ...headers].every((header) => {
          const parsed = header ? parseAccept(header) : parseAccept("*/*");
          return preferredMediaType(header, offers, fallback) ===
            pickMediaType(parsed, offers, fallback);
        });
      },
    ),
    { numRuns: 2000 },
  );
});

Deno.test("property: whitespace and letter case do not change the answer", () => {
  const spaced = fc.array(member, { minLength: 1, maxLength: 5 });
  fc.assert(
    fc.property(spaced, offerList, (members, offers) => {
      const tight = members.join(",");
      const loose = ` ${members.map((m) => m.replaceAll(";", " ; ")).join(" ,  ")} `;
      return preferredMediaType(tight, offers) === preferredMediaType(loose, offers) &&
        preferredMediaType(tight, offers) === preferredMediaType(tight.toUpperCase(), offers);
    }),
    { numRuns: 1000 },
  );
});

Deno.test("parseAcceptLanguage reads language ranges and weights, dropping what does not parse", () => {
  assert.deepEqual(parseAcceptLanguage("fr;q=0.9, de-CH;q=0.8, EN;Q=0.5, *;q=0.1"), [
    { range: "fr", q: 0.9 },
    { range: "de-ch", q: 0.8 },
    { range: "en", q: 0.5 },
    { range: "*", q: 0.1 },
  ]);
  for (const bad of ["de_DE", "toolongtag", "de-", "-de", "d e", "de;q=2", "de;q=abc", "1de"]) {
    assert.deepEqual(parseAcceptLanguage(`${bad}, en`), [{ range: "en", q: 1 }], bad);
  }
});

Deno.test("preferredLanguage: RFC 4647 lookup in order of weight, then as sent", () => {
  const offers = ["en", "de"];
  const cases: [string | undefined, string | undefined][] = [
    [undefined, undefined],
    ["", undefined],
    ["de", "de"],
    ["DE", "de"],
    ["de-CH", "de"],
    ["de-CH-1996", "de"],
    ["de-x-private", "de"],
    ["fr", undefined],
    ["*", undefined],
    ["x-private", undefined],
    ["en, de", "en"],
    ["de, en", "de"],
    ["en;q=0.5, de", "de"],
    ["fr;q=0.9, de-CH;q=0.8, en;q=0.5", "de"],
    ["en;q=0, de;q=0", undefined],
    // A tag is refused only by the ranges that name it, and only when they all weigh it 0.
    ["de;q=0, de-CH", undefined], // old: de
    ["de-CH;q=0, de", "de"],
    ["de;q=0, de;q=0.5", "de"],
  ];
  for (const [header, expected] of cases) {
    assert.equal(preferredLanguage(header, offers), expected, String(header));
  }
  // RFC 4647 3.4's example: a singleton is dropped with the subtag after it.
  const range = "zh-Hant-CN-x-private1-private2";
  assert.equal(preferredLanguage(range, ["zh-hant-cn-x-private1"]), "zh-hant-cn-x-private1");
  assert.equal(preferredLanguage(range, ["zh-hant-cn"]), "zh-hant-cn");
  assert.equal(preferredLanguage(range, ["zh-hant-cn-x"]), undefined);
  assert.equal(preferredLanguage(range, ["zh"]), "zh");
});

Deno.test("negotiateLanguage (lib/errors.ts): German when preferred, else English", () => {
  const cases: [string | null | undefined, string][] = [
    [null, "en"],
    ["de", "de"],
    ["de-AT, en;q=0.9", "de"],
    ["fr;q=0.9, de-CH;q=0.8, en;q=0.5", "de"],
    ["en-US, de;q=0.9", "en"],
    ["fr", "en"],
    ["*", "en"],
    ["de;q=0", "en"],
    ["constructor, toString-DE;q=0.9", "en"],
    // Differences from the parser it replaced (old answer in the comment):
    ["de;Q=0.1, en;q=0.5", "en"], // old: de (an upper-case Q was not a weight)
    ["en, de;q=1.5", "en"], // old: de (q=1.5 outranked 1)
    ["de;q=0, de-CH", "en"], // old: de (de-CH overrode a refused de)
  ];
  for (const [header, expected] of cases) {
    assert.equal(negotiateLanguage(header), expected, String(header));
  }
});

Deno.test("exportType (routes/owner_data.ts): NDJSON unless JSON is preferred", () => {
  const cases: [string | undefined, string | undefined][] = [
    [undefined, "ndjson"],
    ["", "ndjson"],
    ["*/*", "ndjson"],
    ["application/*", "ndjson"],
    ["application/x-ndjson", "ndjson"],
    ["application/json", "json"],
    ["application/x-ndjson;q=0.5, application/json", "json"],
    ["application/json, application/x-ndjson", "ndjson"],
    ["application/json;q=0.5, */*", "ndjson"],
    ["application/x-ndjson;q=0, */*", "json"],
    ["text/html", undefined],
    ["*/*;q=0", undefined],
    // Differences from the parser it replaced (old answer in the comment):
    ["application/json, */*", "json"], // old: ndjson (a named type beats a wildcard)
    ["application/*;q=0, application/*;q=1", "ndjson"], // old: none (first of equals)
    ["*/*;Q=0", undefined], // old: ndjson (an upper-case Q was not a weight)
  ];
  for (const [header, expected] of cases) {
    assert.equal(exportType(header), expected, String(header));
  }
});

Deno.test("renderAppError (server/render_error.ts): problem+json when Accept prefers it", async () => {
  const app = new Hono<AppEnv>();
  app.use((c, next) => {
    c.set("requestId", "r-1");
    return next();
  });
  app.get("/x", () => {
    throw new AppError("book-not-found", "No book 9.");
  });
  app.onError((error, c) => renderAppError(c, error as AppError));
  const cases: [string | undefined, string][] = [
    [undefined, "application/json"],
    ["*/*", "application/json"],
    ["application/json", "application/json"],
    ["text/html", "application/json"],
    ["application/problem+json", "application/problem+json"],
    ["application/json, application/problem+json", "application/problem+json"],
    ["application/problem+json, */*", "application/problem+json"],
    // Differences from the substring test it replaced (old answer in the comment):
    ["application/problem+json;q=0", "application/json"], // old: problem+json
    ["application/problem+json;q=0.5, application/json", "application/json"], // old: problem+json
    ["*/*, application/json;q=0.5", "application/problem+json"], // old: json
  ];
  for (const [accept, type] of cases) {
    const res = await app.request("/x", { headers: accept === undefined ? {} : { accept } });
    assert.equal(res.status, 404);
    assert.equal(res.headers.get("content-type"), type, String(accept));
    const body = await res.json();
    if (type === "application/problem+json") assert.equal(body.status, 404);
    else assert.equal(body.errors[0].error, "book-not-found");
  }
});
