/**
 * lib/http/etag.ts and conditional.ts: strong ETags, If-Match (RFC 9110 13.1.1, strong
 * comparison), If-None-Match (13.1.2, weak comparison), their order on a write (13.2.2) and the
 * 200/304 answer of a conditional JSON read.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { BOOKS_CACHE_CONTROL, conditionalJson } from "../../lib/http/conditional.ts";
import {
  collectionCondition,
  contentEtag,
  ifMatchHits,
  ifNoneMatchHits,
  newVersionEtag,
  writePrecondition,
} from "../../lib/http/etag.ts";

const encoder = new TextEncoder();

Deno.test("contentEtag: a strong, quoted tag of the bytes, the same for the same bytes", () => {
  const tag = contentEtag(encoder.encode('{"title":"Ulysses"}'));
  assert.match(tag, /^"[A-Za-z0-9_-]{27}"$/);
  assert.equal(contentEtag(encoder.encode('{"title":"Ulysses"}')), tag);
  assert.notEqual(contentEtag(encoder.encode('{"title":"Ulysses!"}')), tag);
  assert.notEqual(contentEtag(new Uint8Array(0)), contentEtag(new Uint8Array(1)));
});

Deno.test("property: different bytes, different ETags; always strong and quoted", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), fc.uint8Array({ maxLength: 64 }), (a, b) => {
      const [ta, tb] = [contentEtag(a), contentEtag(b)];
      const same = a.length === b.length && a.every((x, i) => x === b[i]);
      return /^"[A-Za-z0-9_-]{27}"$/.test(ta) && (same ? ta === tb : ta !== tb);
    }),
    { numRuns: 500 },
  );
});

Deno.test("ifNoneMatchHits: weak comparison over a list, and *", () => {
  const etag = '"abc"';
  const cases: [string | null | undefined, boolean][] = [
    [null, false],
    [undefined, false],
    ["", false],
    [etag, true],
    ['W/"abc"', true],
    ["*", true],
    [' "x" , "abc" ', true],
    ['"x",W/"abc"', true],
    ['"x", *', true],
    ['"abcd"', false],
    ['"ab"', false],
    ["abc", false],
    ['w/"abc"', false],
    ['"x", "y"', false],
    [",,,", false],
  ];
  for (const [header, expected] of cases) {
    assert.equal(ifNoneMatchHits(header, etag), expected, String(header));
  }
});

Deno.test("ifMatchHits: strong comparison over a list, and *; a weak tag never matches", () => {
  const etag = '"00000000000000010000"';
  const cases: [string, boolean][] = [
    ["", false],
    [etag, true],
    [`W/${etag}`, false],
    ["*", true],
    [` "x" , ${etag} `, true],
    [`"x",W/${etag}`, false],
    ['"x", *', true],
    ["00000000000000010000", false],
    ['"*"', false],
    ['"x", "y"', false],
    [",,,", false],
  ];
  for (const [header, expected] of cases) {
    assert.equal(ifMatchHits(header, etag), expected, header);
  }
  // A representation without an ETag (a collection): only `*`.
  assert.equal(ifMatchHits("*", undefined), true);
  assert.equal(ifMatchHits('"x", *', undefined), true);
  assert.equal(ifMatchHits('"x"', undefined), false);
  assert.equal(ifMatchHits("", undefined), false);
});

Deno.test("newVersionEtag: strong, quoted, 128 random bits, never the same twice", () => {
  const tags = new Set(Array.from({ length: 10_000 }, newVersionEtag));
  assert.equal(tags.size, 10_000);
  for (const tag of tags) assert.match(tag, /^"[A-Za-z0-9_-]{22}"$/);
});

Deno.test("writePrecondition: RFC 9110 13.2.2 — If-Match first, then If-None-Match, on the current ETag or none", () => {
  const etag = '"v1"';
  const cases: [string | undefined, string | undefined, string | undefined, string | undefined][] =
    [
      // [If-Match, If-None-Match, current ETag (undefined: none), the header that fails]
      [etag, undefined, etag, undefined],
      ['"v0"', undefined, etag, "If-Match"],
      ["*", undefined, etag, undefined],
      ["*", undefined, undefined, "If-Match"],
      [etag, undefined, undefined, "If-Match"],
      [`W/${etag}`, undefined, etag, "If-Match"],
      [undefined, "*", etag, "If-None-Match"],
      [undefined, "*", undefined, undefined],
      [undefined, etag, etag, "If-None-Match"],
      [undefined, `W/${etag}`, etag, "If-None-Match"],
      [undefined, `"v0", ${etag}`, etag, "If-None-Match"],
      [undefined, '"v0"', etag, undefined],
      [undefined, etag, undefined, undefined],
      // Both: If-Match decides first; only when it holds does If-None-Match count.
      ['"v0"', "*", etag, "If-Match"],
      ['"v0"', "*", undefined, "If-Match"],
      [etag, "*", etag, "If-None-Match"],
      [etag, '"v0"', etag, undefined],
      ["*", etag, etag, "If-None-Match"],
    ];
  for (const [ifMatch, ifNoneMatch, current, failed] of cases) {
    const condition = writePrecondition(ifMatch, ifNoneMatch)!;
    assert.equal(condition(current), failed, `${ifMatch} / ${ifNoneMatch} on ${current}`);
  }
  assert.equal(writePrecondition(undefined, undefined), undefined, "no condition");
});

Deno.test("collectionCondition: the collection exists and has no ETag", () => {
  assert.equal(collectionCondition(undefined, undefined), undefined);
  assert.equal(collectionCondition("*", undefined), undefined);
  assert.equal(collectionCondition('"x"', undefined), "If-Match");
  assert.equal(collectionCondition(undefined, "*"), "If-None-Match");
  assert.equal(collectionCondition(undefined, '"x", W/"y"'), undefined);
  assert.equal(collectionCondition('"x"', "*"), "If-Match");
  assert.equal(collectionCondition("*", "*"), "If-None-Match");
});

const otherTag = fc.stringMatching(/^[a-z0-9]{0,8}$/).map((s) => `"x${s}"`);

Deno.test("property: a list hits exactly when it holds the tag (strong or weak) or *", () => {
  fc.assert(
    fc.property(
      fc.array(otherTag, { maxLength: 5 }),
      fc.constantFrom(undefined, '"abc"', 'W/"abc"', "*"),
      fc.nat(5),
      fc.constantFrom(",", ", ", " , "),
      (others, hit, at, separator) => {
        const tags = [...others];
        if (hit !== undefined) tags.splice(at % (tags.length + 1), 0, hit);
        return ifNoneMatchHits(tags.join(separator), '"abc"') === (hit !== undefined);
      },
    ),
    { numRuns: 1000 },
  );
});

Deno.test("conditionalJson: 200 with the body, or 304 with the same headers and no body", async () => {
  const body = encoder.encode('[{"title":"Ulysses"}]');
  const etag = contentEtag(body);
  const answer = {
    type: "application/vnd.books.v1+json",
    etag,
    cacheControl: BOOKS_CACHE_CONTROL,
    requestId: "r-1",
  };
  const expected = {
    "cache-control": BOOKS_CACHE_CONTROL,
    "etag": etag,
    "vary": "Accept",
    "x-content-type-options": "nosniff",
    "x-request-id": "r-1",
  };

  const full = conditionalJson(body, { ...answer, ifNoneMatch: '"stale"' });
  assert.equal(full.status, 200);
  assert.deepEqual(Object.fromEntries(full.headers), {
    ...expected,
    "content-type": "application/vnd.books.v1+json",
  });
  assert.deepEqual(new Uint8Array(await full.arrayBuffer()), body);

  for (const ifNoneMatch of [etag, `W/${etag}`, "*", `"other", ${etag}`]) {
    const notModified = conditionalJson(body, { ...answer, ifNoneMatch });
    assert.equal(notModified.status, 304, ifNoneMatch);
    assert.deepEqual(Object.fromEntries(notModified.headers), expected, ifNoneMatch);
    assert.equal(notModified.body, null);
  }

  const unconditional = conditionalJson(body, { ...answer, ifNoneMatch: null });
  assert.equal(unconditional.status, 200);
  await unconditional.body?.cancel();
});
