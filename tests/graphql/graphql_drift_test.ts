/**
 * The interface descriptions against the one definition of an address (lib/address.ts's field
 * table): the GraphQL SDL served at /graphql/schema.graphql (which must be the schema the
 * endpoint runs) and the OpenAPI document at /openapi.json (built from the zod schemas, so this
 * guards the wiring). A field added to the table, or a rule changed there, must show in both;
 * a description that lists fields by hand would drift and fail here.
 */
import assert from "node:assert/strict";
import {
  buildSchema,
  type GraphQLField,
  type GraphQLInputField,
  isInputObjectType,
  isNonNullType,
  isObjectType,
  printSchema,
} from "graphql";
import { addressFieldsFragment } from "../../clients/generate_graphql.ts";
import { SDL_CONTENT_TYPE } from "../../graphql/schema_route.ts";
import { createSchema } from "../../graphql/schema.ts";
import {
  ADDRESS_FIELD_NAMES,
  ADDRESS_FIELDS,
  type AddressField,
  type AddressFieldName,
  REQUIRED_FIELD_NAMES,
} from "../../lib/address.ts";
import { startTestServer } from "../support/server.ts";

const TABLE: Readonly<Record<AddressFieldName, AddressField>> = ADDRESS_FIELDS;

/** A field's type as the SDL writes it (`String!`). */
function typeOf(field: GraphQLField<unknown, unknown> | GraphQLInputField): string {
  return String(field.type);
}

/** The fields of a named object or input type of `schema`, in order, with their types. */
function fieldsOf(schema: ReturnType<typeof buildSchema>, name: string): [string, string][] {
  const type = schema.getType(name);
  assert.ok(isObjectType(type) || isInputObjectType(type), `the SDL has no ${name}`);
  return Object.values(type.getFields()).map((field) => [field.name, typeOf(field)]);
}

const served = await (async () => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  try {
    const sdl = await fetch(`${server.httpUrl}/graphql/schema.graphql`);
    const openapi = await fetch(`${server.httpUrl}/openapi.json`);
    return {
      status: sdl.status,
      type: sdl.headers.get("content-type"),
      sdl: await sdl.text(),
      openapi: await openapi.json(),
    };
  } finally {
    await server.close();
  }
})();

Deno.test("the served SDL is the schema the endpoint runs", () => {
  assert.equal(served.status, 200);
  assert.equal(served.type, SDL_CONTENT_TYPE);
  assert.equal(served.sdl, `${printSchema(createSchema())}\n`);
});

Deno.test("GraphQL's Address, AddressInput and AddressPatch are the field table", () => {
  const schema = buildSchema(served.sdl);
  const required = (name: AddressFieldName) => !TABLE[name].optional;
  assert.deepEqual(fieldsOf(schema, "Address"), [
    ["id", "ID!"],
    ...ADDRESS_FIELD_NAMES.map((name) => [name, required(name) ? "String!" : "String"]),
    ["etag", "String!"],
  ]);
  assert.deepEqual(
    fieldsOf(schema, "AddressInput"),
    ADDRESS_FIELD_NAMES.map((name) => [name, required(name) ? "String!" : "String"]),
  );
  // Every patch field is nullable: `null` must be sayable (it removes, or is invalid-field).
  assert.deepEqual(
    fieldsOf(schema, "AddressPatch"),
    ADDRESS_FIELD_NAMES.map((name) => [name, "String"]),
  );
  // Each input field's description states its length rule, or the table's own description.
  const input = schema.getType("AddressInput");
  assert.ok(isInputObjectType(input));
  for (const name of ADDRESS_FIELD_NAMES) {
    const declared: GraphQLInputField = input.getFields()[name]!;
    const rule = TABLE[name].description ?? `1 to ${TABLE[name].maxLength} characters`;
    assert.ok(declared.description?.includes(rule), `${name}: ${declared.description}`);
    assert.equal(isNonNullType(declared.type), required(name));
  }
});

Deno.test("the typed client's AddressFields fragment selects every field of Address", () => {
  const fragment = addressFieldsFragment(createSchema());
  const selected = [...fragment.matchAll(/^ {2}(\w+)$/gm)].map((m) => m[1]);
  assert.deepEqual(selected, ["id", ...ADDRESS_FIELD_NAMES, "etag"]);
});

/** True when a JSON Schema property accepts `null` (3.1: `type` lists it, or an `anyOf` does). */
function acceptsNull(property: Record<string, unknown>): boolean {
  const types = [
    property.type,
    ...((property.anyOf as { type?: string }[]) ?? []).map((s) => s.type),
  ]
    .flat();
  return types.includes("null");
}

Deno.test("OpenAPI's Address, AddressInput and AddressMergePatch are the field table", () => {
  const schemas = served.openapi.components.schemas;
  const address = schemas.Address;
  assert.deepEqual(Object.keys(address.properties), ["id", ...ADDRESS_FIELD_NAMES]);
  assert.deepEqual(address.required, ["id", ...REQUIRED_FIELD_NAMES]);
  for (
    const [schemaName, patch] of [["AddressInput", false], ["AddressMergePatch", true]] as const
  ) {
    const schema = schemas[schemaName];
    assert.deepEqual(Object.keys(schema.properties), [...ADDRESS_FIELD_NAMES], schemaName);
    // A merge patch requires nothing; an input what the table requires.
    assert.deepEqual(schema.required ?? [], patch ? [] : REQUIRED_FIELD_NAMES, schemaName);
    for (const name of ADDRESS_FIELD_NAMES) {
      const field = TABLE[name];
      const property = schema.properties[name];
      const where = `${schemaName}.${name}`;
      assert.equal(property.minLength, 1, where);
      assert.equal(property.maxLength, field.maxLength, where);
      assert.equal(property.pattern, field.pattern?.documented, where);
      if (!patch && field.optional) {
        // An input's optional field also says what `null` means there.
        assert.ok(property.description.startsWith(field.description ?? ""), where);
        assert.match(property.description, /`null` means absent/, where);
      } else {
        assert.equal(property.description, field.description, where);
      }
      assert.equal(property.example, field.example, where);
      // `null` removes an optional field in a patch, and is its absence in an input.
      assert.equal(acceptsNull(property), field.optional === true, where);
    }
  }
});
