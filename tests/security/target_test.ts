/**
 * security/target.ts, the canonical request target (docs/security.md, "One request, one view"):
 * tables of targets accepted and refused, and properties: whatever the input, the answer is
 * undefined or a path that Hono's router, the WHATWG URL parser and `canonicalRequestPath` all
 * read as the same string; every target built of canonical segments is accepted; and a Host
 * header cannot move part of itself into the path.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { getPath } from "hono/utils/url";
import { canonicalPath, canonicalRequestPath, rawPathOf } from "../../security/target.ts";

Deno.test("canonicalRequestPath accepts targets with nothing to decode or normalise", () => {
  const accepted: [string, string][] = [
    ["/", "/"],
    ["/rest/books", "/rest/books"],
    ["/api/book/1", "/api/book/1"],
    ["/addresses?limit=5&cursor=abc", "/addresses"],
    ["/addresses?", "/addresses"],
    ["/?q=%20x", "/"],
    ['/graphql?query={books{title}}&x="y"', "/graphql"],
    ["/books.v1.BooksService/books", "/books.v1.BooksService/books"],
    ["/graphql/assets/graphiql.css", "/graphql/assets/graphiql.css"],
    // A trailing slash is canonical: the router answers 404, never another route.
    ["/rest/books/", "/rest/books/"],
    // Dots that are not a whole segment, and every other pchar.
    ["/.well-known/x", "/.well-known/x"],
    ["/..a/a../...", "/..a/a../..."],
    ["/a;b=c,d/e:f@g/~h/!$&'()*+", "/a;b=c,d/e:f@g/~h/!$&'()*+"],
  ];
  for (const [target, path] of accepted) assert.equal(canonicalRequestPath(target), path, target);
});

Deno.test("canonicalRequestPath refuses what a layer could read differently", () => {
  const refused = [
    "",
    "rest/books",
    "*",
    "http://h/rest/books",
    "//rest/books",
    "/rest//books",
    "/.",
    "/..",
    "/./rest/books",
    "/rest/../addresses",
    "/rest/books/.",
    "/rest/books/..?x",
    "/%61ddresses",
    "/rest/%62ooks",
    "/a%2Fb",
    "/a%",
    "/rest/books#x",
    "/rest/books?x#y",
    "/rest\\books",
    "/rest/books\\",
    "/rest books",
    "/r\u00e9st",
    "/rest/books?x=\u00e9",
    "/rest/books?a b",
    "/rest/books\t",
    "/rest/books\u0000",
    "/a|b",
    "/a{b}",
    "/a^b",
    "/a`b",
    '/a"b',
    "/a<b>",
  ];
  for (const target of refused) {
    assert.equal(canonicalRequestPath(target), undefined, JSON.stringify(target));
  }
});

Deno.test("canonicalPath: the path of a URL whose authority is the Host sent, nothing else", () => {
  const cases: [string, string | null, string | undefined][] = [
    ["http://h/rest/books", "h", "/rest/books"],
    ["http://localhost:8000/a?x=1", "localhost:8000", "/a"],
    ["http://127.0.0.1:80/", "127.0.0.1:80", "/"],
    ["http://[::1]:8080/a", "[::1]:8080", "/a"],
    ["https://api.example.com/a", "api.example.com", "/a"],
    // Without a Host header (HTTP/1.0), the URL's authority is still judged.
    ["http://h/a", null, "/a"],
    ["http://user@h/a", null, undefined],
    // A Host that does not match the URL's authority.
    ["http://h/a", "other", undefined],
    ["http://h/evil/a", "h/evil", undefined],
    ["http://h#/a", "h#", undefined],
    ["http://h%2F/a", "h%2F", undefined],
    ["http://h\\x/a", "h\\x", undefined],
    ["http://h@x/a", "h@x", undefined],
    ["http://h:123456/a", "h:123456", undefined],
    ["http://h", "h", undefined],
    ["http://h/a%2Fb", "h", undefined],
  ];
  for (const [url, host, expected] of cases) {
    assert.equal(canonicalPath(url, host), expected, `${url} (Host ${host})`);
  }
});

Deno.test("rawPathOf: the path as sent, up to the query, at most 200 characters", () => {
  assert.equal(rawPathOf("http://h/a/b?x=1"), "/a/b");
  assert.equal(rawPathOf("http://h/%61/../b"), "/%61/../b");
  assert.equal(rawPathOf("http://h"), "/");
  assert.equal(rawPathOf(`http://h/${"a".repeat(300)}`), `/${"a".repeat(199)}`);
});

const PIECES = [
  "/",
  "/",
  "/",
  ".",
  "..",
  "a",
  "B",
  "1",
  "books",
  "%",
  "%2F",
  "%2e",
  "%61",
  "?",
  "#",
  "\\",
  " ",
  "\u00e9",
  "\u{1F4DA}",
  ";",
  "=",
  ":",
  "@",
  "~",
  "-",
  "_",
  "!",
  "$",
  "&",
  "'",
  "(",
  ")",
  "*",
  "+",
  ",",
  '"',
  "<",
  "{",
  "|",
  "^",
  "`",
  "\t",
  "\u0000",
];
// Mostly the characters a canonical path may hold, so that many targets are accepted.
const LIKELY = [
  "/",
  "/",
  ".",
  "..",
  "a",
  "B",
  "1",
  "books",
  ";",
  "=",
  ":",
  "@",
  "~",
  "-",
  "!",
  "?",
];
const anyTarget = fc.oneof(
  fc.array(fc.constantFrom(...LIKELY), { maxLength: 12 }).map((p) => `/${p.join("")}`),
  fc.array(fc.constantFrom(...PIECES), { maxLength: 14 }).map((p) => `/${p.join("")}`),
  fc.array(fc.constantFrom(...PIECES), { maxLength: 14 }).map((p) => p.join("")),
  fc.string({ maxLength: 30 }),
);

Deno.test("property: any target is refused or read identically by every reader", () => {
  fc.assert(
    fc.property(anyTarget, (target) => {
      const path = canonicalRequestPath(target);
      if (path === undefined) return true;
      const rest = target.slice(path.length);
      assert.ok(target.startsWith(path) && (rest === "" || rest.startsWith("?")), target);
      assert.ok(path.startsWith("/") && !path.includes("//"), target);
      assert.ok(path.split("/").every((s) => s !== "." && s !== ".."), target);
      assert.ok(!/[%#\\\s]|[^\x21-\x7e]/.test(path), target);
      assert.equal(decodeURI(path), path);
      assert.equal(encodeURI(path), path);
      const request = new Request(`http://h${target}`);
      assert.equal(getPath(request), path, "Hono's router");
      assert.equal(new URL(request.url).pathname, path, "the WHATWG URL");
      assert.equal(canonicalPath(`http://h${target}`, "h"), path, "the URL as sent");
      assert.equal(canonicalPath(request.url, "h"), path, "the URL as serialised");
      return true;
    }),
    { numRuns: 3000 },
  );
});

const PCHARS = "abcXYZ019-._~!$&'()*+,;=:@";
const segment = fc.string({ unit: fc.constantFrom(...PCHARS), minLength: 1, maxLength: 8 })
  .filter((s) => s !== "." && s !== "..");
const query = fc.string({
  unit: fc.constantFrom(..."abc=&%20/?:@!$'()*+,;-._~\"<>[]{}|^`"),
  maxLength: 12,
});

Deno.test("property: every target of canonical segments is accepted as it is", () => {
  fc.assert(
    fc.property(
      fc.array(segment, { maxLength: 5 }),
      fc.boolean(),
      fc.option(query, { nil: undefined }),
      (segments, slash, q) => {
        const path = `/${segments.join("/")}${slash && segments.length > 0 ? "/" : ""}`;
        const target = q === undefined ? path : `${path}?${q}`;
        return canonicalRequestPath(target) === path;
      },
    ),
    { numRuns: 2000 },
  );
});

const HOST_PIECES = [
  "h",
  "example",
  ".",
  ":",
  "80",
  "[",
  "]",
  "::1",
  "/",
  "@",
  "#",
  "?",
  "%",
  "\\",
  " ",
];

Deno.test("property: a Host header cannot move part of itself into the path", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.constantFrom("h", "h:8000", "127.0.0.1", "[::1]:8080", "api.example.com"),
        fc.array(fc.constantFrom(...HOST_PIECES), { minLength: 1, maxLength: 6 }).map((p) =>
          p.join("")
        ),
      ),
      anyTarget,
      (host, target) => {
        const url = `http://${host}${target}`;
        const path = canonicalPath(url, host);
        if (path === undefined) return true;
        assert.equal(path, canonicalRequestPath(target), url);
        let parsed: URL | undefined;
        try {
          parsed = new URL(url);
        } catch {
          // Not a URL for WHATWG (a port past 65535): nothing of the host reached the path.
        }
        if (parsed !== undefined) assert.equal(parsed.pathname, path, url);
        return true;
      },
    ),
    { numRuns: 3000 },
  );
});
