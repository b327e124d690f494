/**
 * lib/http/request_id.ts: a client's X-Request-Id is echoed only when harmless in logs and
 * headers; anything else gets a fresh UUID.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { requestIdFrom } from "../../lib/http/request_id.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const HARMLESS = /^[A-Za-z0-9._:-]{1,128}$/;

Deno.test("requestIdFrom echoes a well-formed id and replaces anything else", () => {
  const kept = [
    "a",
    "client-chosen-1",
    "0f8fad5b-d9cb-469f-a165-70867728950e",
    "trace:span.1_2",
    "x".repeat(128),
  ];
  for (const id of kept) assert.equal(requestIdFrom(id), id);
  const replaced = [
    null,
    undefined,
    "",
    "x".repeat(129),
    "not a valid id",
    "id\r\nSet-Cookie: a=b",
    "é",
    "../../etc",
    "a/b",
    '"quoted"',
    "tab\there",
  ];
  for (const id of replaced) assert.match(requestIdFrom(id), UUID, String(id));
});

Deno.test("a replaced id is new each time", () => {
  assert.notEqual(requestIdFrom(null), requestIdFrom(null));
  assert.notEqual(requestIdFrom("bad id"), requestIdFrom("bad id"));
});

Deno.test("property: the id is the client's exactly when harmless, and always harmless", () => {
  const header = fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9._:-]{1,140}$/),
    fc.string({ maxLength: 140 }),
    fc.string({ unit: "binary", maxLength: 20 }),
    fc.constantFrom(null, undefined),
  );
  fc.assert(
    fc.property(header, (value) => {
      const id = requestIdFrom(value);
      const kept = typeof value === "string" && HARMLESS.test(value);
      return HARMLESS.test(id) && (kept ? id === value : UUID.test(id));
    }),
    { numRuns: 1000 },
  );
});
