/**
 * lib/http/body.ts: which Content-Types a write takes (one definition for every layer), and
 * reading a body with a byte limit (413 at once when Content-Length says so, else as soon as
 * the stream passes it).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { AppError } from "../../lib/errors.ts";
import {
  bodyTypesFor,
  isBodyTypeFor,
  isJsonContentType,
  MERGE_PATCH_JSON,
  readBodyLimited,
} from "../../lib/http/body.ts";
import { mediaTypeOf } from "../../lib/http/media_type.ts";
import { VENDOR_JSON, VENDOR_JSON_V2 } from "../../lib/http/negotiate.ts";

Deno.test("isBodyTypeFor: JSON and the vendor types for POST and PUT, merge-patch for PATCH", () => {
  const cases: [string, string | null | undefined, boolean][] = [
    ["POST", "application/json", true],
    ["POST", "APPLICATION/JSON; charset=utf-8", true],
    ["POST", `${VENDOR_JSON}; q=1`, true],
    ["PUT", VENDOR_JSON_V2, true],
    ["PUT", "application/json;;;", true],
    ["POST", MERGE_PATCH_JSON, false],
    ["POST", "application/jsonx", false],
    ["POST", "text/json", false],
    ["POST", "application/json-patch+json", false],
    ["POST", undefined, false],
    ["POST", "", false],
    ["PATCH", MERGE_PATCH_JSON, true],
    ["PATCH", `${MERGE_PATCH_JSON.toUpperCase()}; charset=utf-8`, true],
    ["PATCH", "application/json", false],
    ["GET", "application/json", false],
    ["DELETE", "application/json", false],
  ];
  for (const [method, type, expected] of cases) {
    assert.equal(isBodyTypeFor(method, type), expected, `${method} ${type}`);
  }
  assert.equal(isJsonContentType(VENDOR_JSON), true);
  assert.equal(isJsonContentType(MERGE_PATCH_JSON), false);
  assert.deepEqual(bodyTypesFor("GET"), undefined);
  assert.deepEqual(bodyTypesFor("PATCH"), [MERGE_PATCH_JSON]);
  assert.deepEqual(bodyTypesFor("PUT"), bodyTypesFor("POST"));
});

Deno.test("property: parameters and letter case never change whether a type is taken", () => {
  const param = fc.string({ unit: fc.constantFrom(...'abc=;" ,/-utf8'), maxLength: 20 });
  fc.assert(
    fc.property(
      fc.constantFrom("POST", "PUT", "PATCH", "GET"),
      fc.constantFrom(
        "application/json",
        VENDOR_JSON,
        VENDOR_JSON_V2,
        MERGE_PATCH_JSON,
        "text/plain",
      ),
      param,
      fc.boolean(),
      (method, type, params, upper) => {
        const value = `${upper ? type.toUpperCase() : type};${params}`;
        return isBodyTypeFor(method, value) === (bodyTypesFor(method)?.includes(type) ?? false) &&
          mediaTypeOf(value) === type;
      },
    ),
    { numRuns: 1000 },
  );
});

function chunked(chunks: Uint8Array[], cancelled: { value: boolean }): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(chunks[i++]!);
      else controller.close();
    },
    cancel() {
      cancelled.value = true;
    },
  });
}

function tooLarge(error: unknown): boolean {
  return error instanceof AppError && error.code === "payload-too-large" && error.status === 413;
}

Deno.test("readBodyLimited: a declared length over the limit is 413 before any byte is read", async () => {
  const request = new Request("http://h/", {
    method: "POST",
    headers: { "content-length": "11" },
    body: new Uint8Array(11),
  });
  await assert.rejects(readBodyLimited(request, 10), tooLarge);
  assert.equal(request.bodyUsed, false);
  const exact = new Request("http://h/", {
    method: "POST",
    headers: { "content-length": "10" },
    body: new Uint8Array(10).fill(7),
  });
  assert.deepEqual(await readBodyLimited(exact, 10), new Uint8Array(10).fill(7));
});

Deno.test("readBodyLimited: a stream is cut off and cancelled once past the limit", async () => {
  const cancelled = { value: false };
  const chunks = [new Uint8Array(6), new Uint8Array(6), new Uint8Array(6)];
  const request = new Request("http://h/", { method: "POST", body: chunked(chunks, cancelled) });
  await assert.rejects(readBodyLimited(request, 10), tooLarge);
  assert.equal(cancelled.value, true);
  assert.deepEqual(await readBodyLimited(new Request("http://h/"), 10), new Uint8Array(0));
});

Deno.test("property: the body whole when within the limit, else 413", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.uint8Array({ maxLength: 16 }), { maxLength: 6 }),
      fc.nat(64),
      async (chunks, limit) => {
        const total = chunks.reduce((n, c) => n + c.byteLength, 0);
        const expected = new Uint8Array(chunks.flatMap((c) => [...c]));
        const request = new Request("http://h/", {
          method: "POST",
          body: chunked(chunks, { value: false }),
        });
        if (total <= limit) {
          assert.deepEqual(await readBodyLimited(request, limit), expected);
        } else {
          await assert.rejects(readBodyLimited(request, limit), tooLarge);
        }
      },
    ),
    { numRuns: 300 },
  );
});
