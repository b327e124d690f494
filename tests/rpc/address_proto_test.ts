/**
 * The .proto's Address has exactly the fields of the one address definition (lib/address.ts):
 * the same names in the same order, a field optional in the table is `optional string` in the
 * .proto (and only such a field), every field a string. `id` and `etag` are the message's own.
 * Read twice: from the generated descriptor the server runs on, and from the .proto file itself
 * by @grpc/proto-loader, so neither a stale generation nor a hand edit slips through.
 */
import assert from "node:assert/strict";
import { type DescField, ScalarType } from "@bufbuild/protobuf";
import { ADDRESS_FIELD_NAMES, OPTIONAL_FIELD_NAMES } from "../../lib/address.ts";
import { AddressSchema } from "../../rpc/gen/addresses/v1/addresses_pb.ts";
import { protoDefinition } from "../support/rpc_clients.ts";

/** The message's own fields, not the address's: the id and the version's entity tag. */
const OWN = new Map([["id", ScalarType.INT64], ["etag", ScalarType.STRING]]);

/** What the table says each field must be in the .proto. */
const EXPECTED = ADDRESS_FIELD_NAMES.map((name) => ({
  name,
  optional: OPTIONAL_FIELD_NAMES.includes(name),
  type: "string",
}));

function described(field: DescField) {
  return {
    name: field.localName,
    optional: field.proto.proto3Optional === true,
    type: field.fieldKind === "scalar" ? ScalarType[field.scalar].toLowerCase() : field.fieldKind,
  };
}

/** `postal_code` → `postalCode`: a proto field name as the table (and JSON) names it. */
function camel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

Deno.test("the generated Address descriptor has the table's fields, in its order", () => {
  const fields = AddressSchema.fields.filter((f) => !OWN.has(f.name));
  assert.deepEqual(fields.map(described), EXPECTED);
  // JSON clients (Connect JSON, buf curl) see the REST member names.
  assert.deepEqual(fields.map((f) => f.jsonName), [...ADDRESS_FIELD_NAMES]);
  for (const [name, scalar] of OWN) {
    const field = AddressSchema.fields.find((f) => f.name === name);
    assert.equal(field?.fieldKind, "scalar", name);
    assert.equal(field.scalar, scalar, name);
  }
});

Deno.test("addresses.proto as written has the table's fields, in its order", () => {
  const definition = protoDefinition("addresses/v1/addresses.proto");
  const message = definition["addresses.v1.Address"] as {
    type: {
      field: { name: string; type: string; proto3Optional?: boolean; oneofIndex?: number }[];
      oneofDecl: { name: string }[];
    };
  };
  const { field, oneofDecl } = message.type;
  // protobufjs marks a proto3 `optional` field with its synthetic oneof `_<name>` instead.
  const optional = (f: (typeof field)[number]) =>
    f.proto3Optional === true || oneofDecl[f.oneofIndex ?? -1]?.name === `_${f.name}`;
  assert.deepEqual(
    field.filter((f) => !OWN.has(f.name)).map((f) => ({
      name: camel(f.name),
      optional: optional(f),
      type: f.type.replace(/^TYPE_/, "").toLowerCase(),
    })),
    EXPECTED,
  );
});
