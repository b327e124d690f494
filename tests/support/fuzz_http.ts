/**
 * Generators of HTTP requests for the fuzz suites: methods, paths (every route, odd id spellings,
 * encoded traversal, long segments), headers (content types with odd parameters, Accept,
 * Accept-Language, If-Match, X-Request-Id, very large values) and bodies (random bytes, mutated
 * addresses, deep nesting, huge numbers, lone surrogates, duplicate keys, a BOM, empty).
 */
import fc from "fast-check";
import {
  ADDRESS_FIELD_NAMES,
  ADDRESS_FIELDS,
  type AddressFieldName,
  AddressInputSchema,
  EXAMPLE_INPUT,
  REQUIRED_FIELD_NAMES,
} from "../../lib/address.ts";
import type { AddressInput } from "./requests.ts";
import { headerText, nastyString, prototypeName } from "./fuzz.ts";

/** One request to send. `body` is never set for GET and HEAD (fetch refuses it). */
export interface HttpCase {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Uint8Array<ArrayBuffer>;
}

const encoder = new TextEncoder();

/** Id spellings for `{id}` path segments: valid, near-valid, hostile. */
const idSpelling: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 6 }).map(String) },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      "0",
      "-1",
      "+1",
      "01",
      "1.0",
      "1e3",
      "0x1",
      "%31",
      "%20",
      "1%00",
      "%2e%2e",
      "..%2f..%2fetc%2fpasswd",
      "%2e%2e%2f",
      "%ff",
      "%",
      "%zz",
      "9007199254740991",
      "9007199254740993",
      "18446744073709551616",
      "-9223372036854775808",
      "١",
      "Infinity",
      "NaN",
      "null",
      "undefined",
      "__proto__",
      "constructor",
      "1;2",
      "1,2",
      "' OR 1=1 --",
      "%F0%9F%92%A5",
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }).map((n) => "9".repeat(n)) },
  {
    weight: 1,
    arbitrary: fc.string({ maxLength: 30 }).map((s) => encodeURIComponent(s)),
  },
);

/**
 * Asset names under `/graphql/assets/` and `/docs/assets/`: the small ones this server writes,
 * unknown ones, and Object.prototype's names (a plain object as the asset table finds those).
 */
const assetName: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: prototypeName },
  { weight: 1, arbitrary: fc.constantFrom("init.js", "page.css", "missing.js", "GRAPHIQL.MIN.JS") },
);

const query: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constant("") },
  {
    weight: 2,
    arbitrary: fc.record({
      limit: fc.oneof(
        fc.constantFrom("0", "1", "2", "50", "500", "501", "-1", "1.5", "abc", "", "1e2", "01"),
        fc.integer().map(String),
      ),
      cursor: fc.oneof(
        fc.constantFrom("", "abc", "AAAA", "null", "%00", "eyJpZCI6MX0", "MQ", "Mg=="),
        fc.string({ maxLength: 40 }).map(encodeURIComponent),
      ),
    }, { requiredKeys: [] }).map((q) =>
      "?" + Object.entries(q).map(([k, v]) => `${k}=${v}`).join("&")
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 60 }).map((s) => "?" + encodeURIComponent(s)) },
  { weight: 1, arbitrary: fc.constantFrom("?limit=1&limit=2", "?&&&", "?=", "?a[]=1", "?%zz") },
);

/** Paths: every route (with odd ids), near-misses, traversal, long segments; plus a query. */
export const path: fc.Arbitrary<string> = fc.tuple(
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constantFrom(
        "/",
        "/rest/books",
        "/addresses",
        "/healthz",
        "/readyz",
        "/openapi.json",
        "/docs",
        "/docs/errors",
        "/graphql",
        "/books.v1.BooksService/books",
      ),
    },
    { weight: 6, arbitrary: idSpelling.map((id) => `/addresses/${id}`) },
    { weight: 3, arbitrary: idSpelling.map((id) => `/api/book/${id}`) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        "/addresses/",
        "//addresses",
        "/addresses/1/",
        "/addresses/1/extra",
        "/ADDRESSES",
        "/rest/books/",
        "/rest/books/1",
        "/api/book/",
        "/api/book",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/addresses/..%2f..%2f",
        "/addresses%2f1",
        "/graphql/assets/..%2f..%2fdeno.json",
        "/graphql/assets/graphiql.js",
        "/docs/..%2fdeno.json",
        "/books.v1.BooksService/Books",
        "/books.v1.BooksService/",
        "/grpc.health.v1.Health/Check",
        "/.env",
      ),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom("/graphql/assets/", "/docs/assets/"), assetName)
        .map(([prefix, name]) => prefix + name),
    },
    {
      weight: 1,
      arbitrary: fc.array(fc.string({ maxLength: 12 }).map(encodeURIComponent), {
        minLength: 1,
        maxLength: 5,
      }).map((parts) => "/" + parts.join("/")),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(
        fc.constantFrom("/addresses/", "/api/book/", "/", "/rest/books/"),
        fc.integer({ min: 1000, max: 20_000 }),
        fc.constantFrom("a", "%2e", "1", "é"),
      ).map(([prefix, n, c]) => prefix + encodeURIComponent(c).repeat(Math.ceil(n / 3))),
    },
  ),
  query,
).map(([p, q]) => p + q);

const essence = fc.constantFrom(
  "application/json",
  "APPLICATION/JSON",
  "Application/Json",
  "application/vnd.books.v1+json",
  "application/vnd.books.v2+json",
  "application/VND.BOOKS.V2+JSON",
  "application/merge-patch+json",
  "application/problem+json",
  "application/foo+json",
  "application/graphql-response+json",
  "application/graphql",
  "application/proto",
  "application/grpc",
  "text/plain",
  "text/json",
  "text/html",
  "application/x-www-form-urlencoded",
  "multipart/form-data",
  "application/octet-stream",
  "*/*",
  "application/*",
  "json",
  "application/",
  "",
);

const params = fc.oneof(
  { weight: 3, arbitrary: fc.constant("") },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      ";",
      ";;;",
      " ;",
      "; charset=utf-8",
      "; charset=UTF-8",
      ";charset=utf-8",
      "; charset=latin1",
      "; charset=utf-16",
      '; charset="utf-8"',
      "; charset",
      "; charset=",
      ";=",
      "; boundary=----x",
      "; q=0.5; a=b",
      "; version=2",
      ";\tcharset=utf-8",
      ", application/json",
    ),
  },
  { weight: 1, arbitrary: headerText(30).map((s) => ";" + s) },
);

/** Content-Type values: JSON and non-JSON types in odd casing with odd parameters. */
export const contentType: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(essence, params).map(([e, p]) => e + p) },
  { weight: 1, arbitrary: headerText(40) },
);

const accept = fc.oneof(
  fc.constantFrom(
    "application/json",
    "application/problem+json",
    "application/vnd.books.v1+json",
    "application/vnd.books.v2+json",
    "application/graphql-response+json",
    "text/html",
    "text/plain",
    "image/png",
    "*/*",
    "application/*",
    "application/json;q=0",
    "application/json;q=0, */*;q=0",
    "application/xml, application/problem+json;q=0.9",
    "*/*;q=0.1, application/vnd.books.v2+json",
    "",
    ",,,",
    ";q=1",
  ),
  prototypeName.map((name) => `application/${name}, ${name}`),
  headerText(60),
);

const acceptLanguage = fc.oneof(
  fc.constantFrom("de", "de-DE", "en", "fr", "de;q=0", "*", "de;q=abc", "en;q=0.1, de;q=0.9", ""),
  prototypeName.map((name) => `${name}, ${name}-DE;q=0.9, de;q=0.1`),
  headerText(60),
);

const ifMatch = fc.oneof(
  fc.constantFrom("*", '"abc"', 'W/"abc"', '""', '"', ",,,", '"00000000000000010000"', "null"),
  prototypeName,
  headerText(80),
);

const requestId = fc.oneof(
  fc.uuid().map(String),
  fc.constantFrom("", "abc", "a".repeat(200), "../../x", "id with spaces", "é"),
  headerText(100),
);

const bigValue = fc.integer({ min: 4_000, max: 40_000 }).map((n) => "a".repeat(n));

/** Request headers: a random subset of the ones the server reads, with odd values. */
export const headers: fc.Arbitrary<Record<string, string>> = fc.record({
  "content-type": contentType,
  "accept": accept,
  "accept-language": acceptLanguage,
  "if-match": ifMatch,
  "if-none-match": ifMatch,
  "x-request-id": requestId,
  "idempotency-key": fc.oneof(
    fc.uuid().map(String),
    fc.constantFrom("k1", "k2", " ", "x".repeat(256)),
    prototypeName,
    headerText(40),
  ),
  "authorization": fc.constantFrom("Bearer x", "Basic Zm9vOmJhcg==", "Bearer ", "bearer a.b.c"),
  "x-big": bigValue,
  "accept-encoding": fc.constantFrom("gzip", "br", "identity;q=0", "*", "x-unknown"),
  "content-encoding": fc.constantFrom("gzip", "identity", "br", "x-unknown"),
}, { requiredKeys: [] }).chain((h) =>
  // A header named like a member of Object.prototype (`constructor: toString`).
  fc.option(fc.tuple(prototypeName, prototypeName), { nil: undefined }).map((extra) =>
    extra === undefined ? { ...h } : { ...h, [extra[0]]: extra[1] }
  )
);

const fieldValue: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(...Object.values(EXAMPLE_INPUT), "Ada", "10115", " x ", "a-b 1"),
  },
  { weight: 2, arbitrary: nastyString(30) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 0, max: 300 }).map((n) => "x".repeat(n)),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(null, 0, -1, 1e308, true, false, [], {}, ["Ada"], { a: 1 }),
  },
);

/** An address with every member perhaps missing, mistyped, hostile or extra. */
export const mutatedAddress: fc.Arbitrary<Record<string, unknown>> = fc.record({
  ...Object.fromEntries(ADDRESS_FIELD_NAMES.map((name) => [name, fieldValue])),
  id: fc.oneof(fc.integer(), fc.constant("1"), fc.constant(null)),
  extra: fc.jsonValue({ maxDepth: 2 }),
}, { requiredKeys: [] });

/** A valid value of one field: its example, any short string or a word, as its rules allow. */
export function validField(name: AddressFieldName): fc.Arbitrary<string> {
  const { example, maxLength } = ADDRESS_FIELDS[name];
  return fc.oneof(
    fc.constant(example),
    fc.string({ minLength: 1, maxLength: Math.min(20, maxLength) }),
    fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9 -]{0,8}[A-Za-z0-9]$/),
  ).filter((value) => AddressInputSchema.shape[name].safeParse(value).success);
}

/** A valid address (what model tests and the valid half of the fuzz send). */
export const validAddress: fc.Arbitrary<AddressInput> = fc.record(
  Object.fromEntries(ADDRESS_FIELD_NAMES.map((name) => [name, validField(name)])),
  { requiredKeys: [...REQUIRED_FIELD_NAMES] },
).map((address) => ({ ...address }) as AddressInput);

/** A valid body as JSON text. */
const SAMPLE = JSON.stringify(EXAMPLE_INPUT);
const FIRST = ADDRESS_FIELD_NAMES[0]!;
const OTHERS = ADDRESS_FIELD_NAMES.slice(1);
const OTHERS_TEXT = JSON.stringify(
  Object.fromEntries(OTHERS.map((name) => [name, EXAMPLE_INPUT[name]])),
).slice(1);

/** The valid body with its first member's value written as the JSON text `raw`. */
function sampleWith(raw: string): string {
  return `{"${FIRST}":${raw}${OTHERS_TEXT === "}" ? "" : ","}${OTHERS_TEXT}`;
}

function jsonText(value: unknown): string {
  return JSON.stringify(value, (_k, v) => v) ?? "null";
}

/** Request bodies: JSON and not, well-formed and not. */
export const body: fc.Arbitrary<Uint8Array<ArrayBuffer>> = fc.oneof(
  { weight: 5, arbitrary: mutatedAddress.map((a) => encoder.encode(jsonText(a))) },
  { weight: 2, arbitrary: validAddress.map((a) => encoder.encode(JSON.stringify(a))) },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => new Uint8Array(b)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => encoder.encode(jsonText(v))) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.integer({ min: 1, max: 50_000 }), fc.constantFrom("[", '{"a":'))
      .map(([n, open]) =>
        encoder.encode(open.repeat(n) + "1" + (open === "[" ? "]" : "}").repeat(n))
      ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "",
      " ",
      "null",
      "[]",
      '"x"',
      "1",
      "{}",
      sampleWith("1e400"),
      sampleWith("123456789012345678901234567890"),
      sampleWith('"\\ud800"'),
      sampleWith('"\\udfff"'),
      `{"${FIRST}":"a",${SAMPLE.slice(1)}`,
      `\ufeff${SAMPLE}`,
      `${SAMPLE} trailing`,
      `${SAMPLE}{}`,
      `{"__proto__":{"admin":true},${SAMPLE.slice(1)}`,
      sampleWith('"a\\u0000"'),
      "{'name':'a'}",
      '{"name":"a",}',
    ).map((s) => encoder.encode(s)),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 60_000, max: 200_000 }).map((n) =>
      encoder.encode(JSON.stringify({ ...EXAMPLE_INPUT, [FIRST]: "x".repeat(n) }))
    ),
  },
);

/** Methods: the usual ones (weighted to writes), odd case and unknown tokens. */
export const method: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.constantFrom("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"),
  },
  { weight: 1, arbitrary: fc.constantFrom("patch", "PROPFIND", "FOO", "QUERY", "M-SEARCH") },
);

/** A whole REST request. */
export const httpCase: fc.Arbitrary<HttpCase> = fc.record({
  method,
  path,
  headers,
  body,
}).map(({ method, path, headers, body }) =>
  method === "GET" || method === "HEAD"
    ? { method, path, headers }
    : { method, path, headers, body }
);

/** One concrete path of every route the HTTP port has, as the router spells it. */
const ROUTED_PATHS = [
  "/",
  "/rest/books",
  "/api/book/1",
  "/addresses",
  "/addresses/1",
  "/graphql",
  "/graphql/assets/init.js",
  "/openapi.json",
  "/docs",
  "/docs/errors",
  "/docs/assets/init.js",
  "/healthz",
  "/readyz",
  "/books.v1.BooksService/books",
] as const;

type Respelling =
  | { kind: "encode"; at: number; lower: boolean }
  | { kind: "fragment"; at: number; suffix: string }
  | { kind: "dot"; at: number; form: string }
  | { kind: "double-slash"; at: number }
  | { kind: "case"; at: number; whole: boolean }
  | { kind: "trailing-slash" }
  | { kind: "prototype"; name: string; replace: boolean }
  | { kind: "backslash"; at: number };

const respelling: fc.Arbitrary<Respelling> = fc.oneof(
  fc.record({ kind: fc.constant("encode" as const), at: fc.nat(), lower: fc.boolean() }),
  fc.record({
    kind: fc.constant("fragment" as const),
    at: fc.nat(),
    suffix: fc.constantFrom("", "x", "/../addresses", "?a=1", "#"),
  }),
  fc.record({
    kind: fc.constant("dot" as const),
    at: fc.nat(),
    form: fc.constantFrom("./", "../", "x/../", ".", "..", "%2e/", "%2E%2E/"),
  }),
  fc.record({ kind: fc.constant("double-slash" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("case" as const), at: fc.nat(), whole: fc.boolean() }),
  fc.record({ kind: fc.constant("trailing-slash" as const) }),
  fc.record({
    kind: fc.constant("prototype" as const),
    name: prototypeName,
    replace: fc.boolean(),
  }),
  fc.record({ kind: fc.constant("backslash" as const), at: fc.nat() }),
);

function slashes(path: string): number[] {
  const at: number[] = [];
  for (let i = 0; i < path.length; i++) if (path[i] === "/") at.push(i);
  return at;
}

function respell(path: string, edit: Respelling): string {
  switch (edit.kind) {
    case "encode": {
      const i = edit.at % path.length;
      const hex = path.charCodeAt(i).toString(16).padStart(2, "0");
      return `${path.slice(0, i)}%${edit.lower ? hex : hex.toUpperCase()}${path.slice(i + 1)}`;
    }
    case "fragment": {
      const i = edit.at % (path.length + 1);
      return `${path.slice(0, i)}#${edit.suffix}${path.slice(i)}`;
    }
    case "dot": {
      const at = slashes(path);
      const i = at[edit.at % at.length]! + 1;
      return `${path.slice(0, i)}${edit.form}${path.slice(i)}`;
    }
    case "double-slash": {
      const at = slashes(path);
      const i = at[edit.at % at.length]!;
      return `${path.slice(0, i)}/${path.slice(i)}`;
    }
    case "case": {
      if (edit.whole) return path.toUpperCase();
      const i = edit.at % path.length;
      const c = path[i]!;
      const flipped = c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase();
      return `${path.slice(0, i)}${flipped}${path.slice(i + 1)}`;
    }
    case "trailing-slash":
      return `${path}/`;
    case "prototype": {
      if (!edit.replace) return `${path === "/" ? "" : path}/${edit.name}`;
      return `${path.slice(0, path.lastIndexOf("/") + 1)}${edit.name}`;
    }
    case "backslash": {
      const at = slashes(path);
      const i = at[edit.at % at.length]!;
      return `${path.slice(0, i)}\\${path.slice(i + 1)}`;
    }
  }
}

/**
 * Other spellings of routed paths (`paths`, default every route): percent-encodings of any
 * character, fragments, dot segments, doubled slashes, case and trailing-slash variants,
 * `Object.prototype` names as segments, backslashes; sometimes none (the path as routed), and
 * sometimes with a query. Sent verbatim (tests/support/raw_http.ts): `fetch` would normalise some.
 */
export function pathSpelling(paths: readonly string[] = ROUTED_PATHS): fc.Arbitrary<string> {
  return fc.tuple(
    fc.constantFrom(...paths),
    fc.array(respelling, { minLength: 0, maxLength: 3 }),
    fc.constantFrom("", "", "", "?limit=1", "?x=%2e%2e", "?a#b"),
  ).map(([path, edits, query]) => edits.reduce(respell, path) + query);
}

/**
 * Request targets no client library sends, in the forms a request line or HTTP/2's `:path` can
 * still carry: a routed path (perhaps respelled) without its leading slash, after `*`, in
 * absolute form, behind a `?` or a `#`. Each is malformed (RFC 9112 and RFC 9113 want an
 * origin-form path) and must never be answered as the path it resembles.
 */
export function rawTargetForm(paths: readonly string[] = ROUTED_PATHS): fc.Arbitrary<string> {
  return fc.tuple(
    pathSpelling(paths),
    fc.constantFrom("no slash", "star", "absolute", "query", "fragment"),
  ).map(([path, form]) => {
    switch (form) {
      case "no slash":
        return path.slice(1) || "?";
      case "star":
        return `*${path === "/" ? "" : path}`;
      case "absolute":
        return `http://localhost${path}`;
      case "query":
        return `?${path}`;
      case "fragment":
        return `#${path}`;
    }
    throw new Error(`unknown form ${form}`);
  });
}
