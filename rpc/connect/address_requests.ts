import { create, isFieldSet } from "@bufbuild/protobuf";
import type { FieldMask } from "@bufbuild/protobuf/wkt";
import { AppError, appErrorFromProblems } from "../../lib/errors.ts";
import {
  ADDRESS_FIELD_NAMES,
  type AddressFieldName,
  type AddressInput,
  AddressInputSchema,
  type AddressPatch,
  AddressPatchSchema,
} from "../../lib/address.ts";
import { problemsFromIssues, type ZodIssueLike } from "../../lib/http/invalid_input.ts";
import { IfMatchSchema } from "../../lib/http/openapi.ts";
import { ifMatchPrecondition } from "../../lib/http/etag.ts";
import { IdempotencyKeySchema } from "../../lib/idempotency_key.ts";
import { PAGE_SIZE } from "../../lib/schemas.ts";
import type { Precondition, StoredAddress } from "../../store/addresses/repository.ts";
import { type Address, AddressSchema } from "../gen/addresses/v1/addresses_pb.ts";

/**
 * What an AddressService request asks for, checked by REST's rules: an address through
 * lib/address.ts's schemas (the same `invalid-field` problems and details as the JSON body that
 * means the same), the other fields as REST's path, query and headers (`invalid-parameter`).
 * Every problem names its field as a protobuf path (`address.postal_code`), which the error's
 * `google.rpc.BadRequest` carries (rpc/connect/errors.ts).
 *
 * proto3 cannot tell an empty string from an absent one: a field without presence that is empty
 * is absent, as a JSON member left out (a required one "is required"); a field with presence
 * (`optional string`) is absent only when unset, and an empty one is refused like `""` in JSON.
 */

/**
 * The protobuf field of every address field: the Address message's fields carry the table's
 * names as their `localName` (tests/rpc/address_proto_test.ts). A field missing from the .proto
 * stops the server at start-up rather than losing data.
 */
const PROTO_FIELDS = new Map(ADDRESS_FIELD_NAMES.map((name) => {
  const field = AddressSchema.field[name];
  if (field === undefined) {
    throw new Error(`addresses.v1.Address has no field for "${name}" of lib/address.ts`);
  }
  return [name, field] as const;
}));

/** The table's name of each protobuf field name (`postal_code` → `postalCode`): mask paths. */
const BY_PROTO_NAME = new Map([...PROTO_FIELDS].map(([name, field]) => [field.name, name]));

/** Output-only fields of Address: an update mask naming them changes nothing (AIP-203). */
const OUTPUT_ONLY = new Set(["id", "etag"]);

/** The address fields `message` sets, as a JSON body would carry them. */
function fieldsSet(
  message: Address | undefined,
  names: readonly AddressFieldName[] = ADDRESS_FIELD_NAMES,
): Partial<Record<AddressFieldName, string>> {
  const fields: Partial<Record<AddressFieldName, string>> = {};
  if (message === undefined) return fields;
  for (const name of names) {
    if (isFieldSet(message, PROTO_FIELDS.get(name)!)) {
      fields[name] = (message as unknown as Record<AddressFieldName, string>)[name];
    }
  }
  return fields;
}

/** The `invalid-field` error of an address that failed its schema, fields as protobuf paths. */
function invalidAddress(issues: readonly ZodIssueLike[]): AppError {
  return appErrorFromProblems(
    problemsFromIssues("json", issues).map((problem) => {
      const field = PROTO_FIELDS.get(problem.field as AddressFieldName)?.name ?? problem.field;
      return { ...problem, field: `address.${field}` };
    }),
  );
}

/** The `invalid-parameter` error of a request field. */
function invalidParameter(field: string, rule: string): AppError {
  return new AppError("invalid-parameter", `Field "${field}" ${rule}.`, { field });
}

/** The address of a create or replace, checked as REST checks its JSON body. */
export function addressInput(message: Address | undefined): AddressInput {
  const parsed = AddressInputSchema.safeParse(fieldsSet(message));
  if (!parsed.success) throw invalidAddress(parsed.error.issues);
  return parsed.data;
}

/**
 * The JSON Merge Patch an update means (AIP-134): the fields the mask names, a field named but
 * not set in `message` as `null` (removed when optional, `invalid-field` when required); no
 * paths: the fields `message` sets; `*`: every field.
 */
export function addressPatch(
  message: Address | undefined,
  mask: FieldMask | undefined,
): AddressPatch {
  const names = maskedFields(message, mask?.paths ?? []);
  const set = fieldsSet(message, names);
  const patch: Record<string, string | null> = {};
  for (const name of names) patch[name] = set[name] ?? null;
  const parsed = AddressPatchSchema.safeParse(patch);
  if (!parsed.success) throw invalidAddress(parsed.error.issues);
  return parsed.data;
}

function maskedFields(message: Address | undefined, paths: readonly string[]): AddressFieldName[] {
  if (paths.length === 0) return Object.keys(fieldsSet(message)) as AddressFieldName[];
  if (paths.includes("*")) {
    if (paths.length > 1) {
      throw invalidParameter("update_mask", "may not name other paths with `*`");
    }
    return [...ADDRESS_FIELD_NAMES];
  }
  const names = new Set<AddressFieldName>();
  for (const path of paths) {
    if (OUTPUT_ONLY.has(path)) continue;
    const name = BY_PROTO_NAME.get(path);
    if (name === undefined) {
      const fields = [...BY_PROTO_NAME.keys()].join(", ");
      throw invalidParameter(
        "update_mask",
        `names ${JSON.stringify(path.slice(0, 100))}, which is not a field of Address (${fields})`,
      );
    }
    names.add(name);
  }
  return [...names];
}

/** An address id: from 1 to 2^53 - 1, as REST's path takes. */
export function addressId(id: bigint): number {
  if (id >= 1n && id <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(id);
  throw invalidParameter("id", "must be a positive integer of at most 2^53 - 1");
}

/** The store's precondition of an `etag`, as REST's `If-Match`; none when empty. */
export function etagCondition(etag: string, field = "etag"): Precondition | undefined {
  if (etag === "") return undefined;
  const checked = IfMatchSchema.safeParse(etag);
  if (!checked.success) throw invalidParameter(field, checked.error.issues[0]!.message);
  return ifMatchPrecondition(etag);
}

/**
 * The etag an update or replace is conditional on (AIP-154): the request's `etag`, or the one the
 * resource carries (`address.etag`, as a client sends back what it read). Both set and different
 * is INVALID_ARGUMENT `invalid-parameter`: which one was meant cannot be told.
 */
export function resourceEtag(
  request: { etag: string; address?: Address | undefined },
): Precondition | undefined {
  const onResource = request.address?.etag ?? "";
  if (onResource === "" || onResource === request.etag) return etagCondition(request.etag);
  if (request.etag === "") return etagCondition(onResource, "address.etag");
  throw new AppError(
    "invalid-parameter",
    'Field "etag" and field "address.etag" differ; send one of them, or both the same.',
    { field: "address.etag" },
  );
}

/** A create's `request_id`: REST's Idempotency-Key; none when empty. */
export function requestId(id: string): string | undefined {
  if (id === "") return undefined;
  const checked = IdempotencyKeySchema.safeParse(id);
  if (!checked.success) throw invalidParameter("request_id", checked.error.issues[0]!.message);
  return id;
}

/**
 * The page a listing asks for (AIP-158): `page_size` 0 is the default; above REST's largest page
 * it is refused like REST's `limit` rather than coerced, so each style refuses the same requests.
 */
export function pageOf(request: { pageSize: number; pageToken: string }): {
  limit: number;
  cursor: string | undefined;
} {
  const { pageSize, pageToken } = request;
  if (pageSize < 0 || pageSize > PAGE_SIZE.max) {
    throw invalidParameter(
      "page_size",
      `must be from 0 (${PAGE_SIZE.default}) to ${PAGE_SIZE.max}`,
    );
  }
  return {
    limit: pageSize || PAGE_SIZE.default,
    cursor: pageToken === "" ? undefined : pageToken,
  };
}

/** The error of a `page_token` the store did not take (not one this server issued). */
export function invalidPageToken(): AppError {
  return invalidParameter("page_token", "is not a next_page_token this server issued");
}

/** A stored address as AddressService answers it, with REST's ETag as its `etag`. */
export function addressMessage(stored: StoredAddress): Address {
  return create(AddressSchema, {
    ...stored.address,
    id: BigInt(stored.address.id),
    etag: stored.etag,
  });
}
