/**
 * Bad input for tests/fuzz/address_model_test.ts: requests wrong in one or more ways (address fields,
 * ids, If-Match, Idempotency-Keys, page sizes and cursors), each with the one error REST's order
 * of checks gives it (the path, then the headers, then the body; a create's body before its
 * key). Every style must answer that code, with as many problems, and store nothing.
 */
import fc from "fast-check";
import {
  ADDRESS_FIELD_NAMES,
  ADDRESS_FIELDS,
  type AddressField,
  type AddressFieldName,
  REQUIRED_FIELD_NAMES,
} from "../../lib/address.ts";
import type { Patch } from "./address_doors.ts";
import { type Target, target } from "./address_model.ts";
import { validAddress } from "./fuzz_http.ts";
import type { AddressInput } from "./requests.ts";

/** Values no address field takes (the empty one is an absent field in protobuf: "is required"). */
const badValue = (name: AddressFieldName) =>
  fc.constantFrom(
    "",
    "   ",
    "x".repeat(250),
    ...((ADDRESS_FIELDS[name] as AddressField).pattern ? ["a!b", "<script>"] : []),
  );

/** A valid input with `count` of its fields spoiled (by the table's order from `first`). */
function spoiled(
  input: AddressInput,
  first: number,
  count: number,
): fc.Arbitrary<{ input: AddressInput; problems: number }> {
  const all = ADDRESS_FIELD_NAMES.length;
  const names = ADDRESS_FIELD_NAMES.map((_, i) => ADDRESS_FIELD_NAMES[(first + i) % all]!)
    .slice(0, Math.max(1, Math.min(count, all)));
  return fc.tuple(...names.map(badValue)).map((values) => ({
    input: { ...input, ...Object.fromEntries(names.map((n, i) => [n, values[i]])) },
    problems: names.length,
  }));
}

/** Ids no address can have: 0, negative, beyond 2^53 − 1. */
const badId = fc.constantFrom(0, -1, 2 ** 53, 2 ** 53 + 2);
/** Idempotency-Keys outside 1 to 255 visible ASCII characters (never empty: gRPC's none). */
const badKey = fc.constantFrom("a b", "k".repeat(256), "tab\there");
/** An If-Match longer than any accepted (1000 characters). */
export const BAD_ETAG = `"${"e".repeat(1000)}"`;
/** Page sizes outside 1 to 500 (gRPC's 0 is its default, so not here), and a foreign cursor. */
const badPageSize = fc.constantFrom(-1, 501, 100_000);
const BAD_CURSOR = "not-a-cursor";

/** A request wrong in one or more ways, and the one error REST's order of checks gives it. */
export type Fault =
  | { op: "create"; input: AddressInput; problems: number; key?: string }
  | { op: "create-key"; input: AddressInput; key: string }
  | { op: "get"; id: number }
  | {
    op: "replace" | "update" | "remove";
    aim: Target;
    id?: number;
    etag: boolean;
    body?: { value: AddressInput | Patch; problems: number };
  }
  | { op: "page"; size: number; cursor?: string };

const badInput = fc.tuple(validAddress, fc.nat(5), fc.integer({ min: 1, max: 3 }))
  .chain(([input, first, count]) => spoiled(input, first, count));
const badPatch = fc.oneof(
  badInput.map(({ input, problems }) => ({ value: input as Patch, problems })),
  fc.subarray([...REQUIRED_FIELD_NAMES], { minLength: 1 }).map((names) => ({
    value: Object.fromEntries(names.map((name) => [name, null])) as Patch,
    problems: names.length,
  })),
);

export const fault: fc.Arbitrary<Fault> = fc.oneof(
  fc.record({
    op: fc.constant("create" as const),
    input: badInput,
    key: fc.option(fc.oneof(fc.constant("k1"), badKey), { nil: undefined }),
  }).map(({ op, input, key }) => ({ op, ...input, ...(key === undefined ? {} : { key }) })),
  fc.record({ op: fc.constant("create-key" as const), input: validAddress, key: badKey }),
  fc.record({ op: fc.constant("get" as const), id: badId }),
  fc.record({
    op: fc.constantFrom("replace" as const, "update" as const, "remove" as const),
    aim: target,
    id: fc.option(badId, { nil: undefined }),
    etag: fc.boolean(),
    input: fc.option(badInput, { nil: undefined }),
    patch: fc.option(badPatch, { nil: undefined }),
  }).map(({ op, aim, id, etag, input, patch }) => {
    const body = op === "replace"
      ? input && { value: input.input, problems: input.problems }
      : op === "update"
      ? patch
      : undefined;
    const wrong = id !== undefined || etag || body !== undefined;
    return {
      op,
      aim,
      ...(id === undefined ? {} : { id }),
      etag: etag || !wrong,
      ...(body === undefined ? {} : { body }),
    };
  }),
  fc.oneof(
    fc.record({
      op: fc.constant("page" as const),
      size: badPageSize,
      cursor: fc.option(fc.constant(BAD_CURSOR), { nil: undefined }),
    }),
    fc.record({
      op: fc.constant("page" as const),
      size: fc.integer({ min: 1, max: 7 }),
      cursor: fc.constant(BAD_CURSOR),
    }),
  ).map(({ cursor, ...page }) => cursor === undefined ? page : { ...page, cursor }),
);
