/**
 * One rule for `null` on an optional field: in a create or replace it means absent, in every
 * style (REST's schemas, GraphQL's input, Connect JSON as proto3 JSON reads it), and the OpenAPI
 * document and the SDL say so. The table has no optional field today, so the rule is exercised
 * two ways: the schema builders of lib/address.ts on a table with one, and a server started with
 * its table's first plain field made optional (lib/address.ts replaced, through an import map,
 * by a copy that says so), over a socket in every style.
 */
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import {
  ADDRESS_FIELD_NAMES,
  ADDRESS_FIELDS,
  type AddressField,
  addressSchemas,
  EXAMPLE_INPUT,
} from "../../lib/address.ts";
import { AddressSchema } from "../../rpc/gen/addresses/v1/addresses_pb.ts";
import { addressBook, errorCode, graphql, sendJson, V2 } from "../support/requests.ts";
import { addressClient, connectTransport } from "../support/rpc_clients.ts";
import { spawnMainOnFreePorts, untilStatus } from "../support/process.ts";

const NOTE: AddressField = { optional: true, maxLength: 20, example: "Leave at the door" };
const TABLE = { ...ADDRESS_FIELDS, note: NOTE };

Deno.test("schema builders: null on an optional field is absent in a create or replace, and refused on a required one", () => {
  const { input, patch, stored } = addressSchemas(TABLE);
  const absent = input.parse({ ...EXAMPLE_INPUT, note: null });
  assert.deepEqual(JSON.parse(JSON.stringify(absent)), EXAMPLE_INPUT);
  assert.equal(absent.note, undefined);
  assert.deepEqual(input.parse(EXAMPLE_INPUT), EXAMPLE_INPUT);
  assert.deepEqual(input.parse({ ...EXAMPLE_INPUT, note: "  Back door " }).note, "Back door");
  // Still not "" (never stored), nor too long, nor another type.
  for (const bad of ["", "   ", "x".repeat(21), 5, {}]) {
    const issues = input.safeParse({ ...EXAMPLE_INPUT, note: bad }).error?.issues ?? [];
    assert.deepEqual(issues.map((i) => i.path), [["note"]], JSON.stringify(bad));
  }
  for (const name of ADDRESS_FIELD_NAMES) {
    const issues = input.safeParse({ ...EXAMPLE_INPUT, [name]: null }).error?.issues ?? [];
    assert.deepEqual(issues.map((i) => i.path), [[name]], `${name}: null is refused`);
  }
  // A merge patch keeps its own rule: null removes an optional field.
  assert.deepEqual(patch.parse({ note: null }), { note: null });
  assert.equal(patch.safeParse({ [ADDRESS_FIELD_NAMES[0]!]: null }).success, false);
  // A stored address never has null.
  assert.equal(stored.safeParse({ id: 1, ...EXAMPLE_INPUT, note: null }).success, false);
  assert.equal(stored.safeParse({ id: 1, ...EXAMPLE_INPUT }).success, true);
});

/** The field the test server makes optional: the first one that is plain (no rule beyond length). */
const FIELD = ADDRESS_FIELD_NAMES.find((name) => {
  const field: AddressField = ADDRESS_FIELDS[name];
  return !field.optional && !field.keptByV1Put && field.pattern === undefined;
})!;

/** Where lib/address.ts's table ends: the copy makes FIELD optional right after it. */
const TABLE_END = "} as const satisfies Record<string, AddressField>;";

/**
 * An import map that is deno.json's with lib/address.ts replaced by a copy whose table has FIELD
 * optional; returns its path (in `dir`).
 */
async function optionalFieldImportMap(dir: string): Promise<string> {
  const source = new URL("../../lib/address.ts", import.meta.url);
  const text = await Deno.readTextFile(source);
  assert.equal(text.split(TABLE_END).length, 2, "lib/address.ts's table ends once, as expected");
  const copy = `${dir}/address.ts`;
  await Deno.writeTextFile(
    copy,
    text.replace(
      TABLE_END,
      `${TABLE_END}\n(ADDRESS_FIELDS as Record<string, AddressField>).${FIELD} = ` +
        `{ ...ADDRESS_FIELDS.${FIELD}, optional: true };\n`,
    ),
  );
  const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  // deno.json's `imports` imply each npm package's subpaths; an import map spells them out.
  const imports: Record<string, string> = { [source.href]: `file://${copy}` };
  for (const [name, target] of Object.entries(config.imports as Record<string, string>)) {
    imports[name] = target;
    if (target.startsWith("npm:")) imports[`${name}/`] = `npm:/${target.slice(4)}/`;
  }
  const map = `${dir}/import_map.json`;
  await Deno.writeTextFile(map, JSON.stringify({ imports }));
  return map;
}

Deno.test(`a server whose table has an optional field (${FIELD}): null is absent in REST, GraphQL and Connect JSON; the documents say so`, async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-optional-" });
  const server = spawnMainOnFreePorts(
    { KV_PATH: `${dir}/kv.sqlite3`, GRPC_PORT: "off", LOG_LEVEL: "warn" },
    { flags: [`--import-map=${await optionalFieldImportMap(dir)}`] },
  );
  try {
    await Promise.race([
      untilStatus(`${server.baseUrl}/readyz`, 200),
      server.exited.then((code) => assert.fail(`exited with ${code}: ${server.output()}`)),
    ]);
    const base = server.baseUrl;
    const without = Object.fromEntries(
      Object.entries(EXAMPLE_INPUT).filter(([name]) => name !== FIELD),
    );
    const withNull = { ...EXAMPLE_INPUT, [FIELD]: null };
    const book = addressBook(base);

    // The documents: the field is optional, and null is allowed and said to be absent.
    const openapi = await (await fetch(`${base}/openapi.json`)).json();
    const input = openapi.components.schemas.AddressInput;
    assert.ok(!input.required.includes(FIELD), "optional in AddressInput");
    assert.deepEqual(input.properties[FIELD].type, ["string", "null"]);
    assert.match(input.properties[FIELD].description, /`null` means absent/);
    const sdl = await (await fetch(`${base}/graphql/schema.graphql`)).text();
    const sdlInput = sdl.slice(sdl.indexOf("input AddressInput"));
    assert.match(sdlInput, new RegExp(`null\\W+means absent[^]*?\\n\\s*${FIELD}: String\\n`));

    // REST: POST, version 2 PUT, version 1 PUT with null store the address without the field.
    const created = await book.create(withNull);
    assert.equal(created.status, 201);
    const body = await created.json();
    assert.deepEqual(body, { id: body.id, ...without });
    const v2 = await book.put(body.id + 1_000, withNull, { "content-type": V2 });
    assert.equal(v2.status, 201);
    assert.deepEqual(await v2.json(), { id: body.id + 1_000, ...without });
    const full = await (await book.create(EXAMPLE_INPUT)).json();
    const v1 = await book.put(full.id, withNull);
    assert.equal(v1.status, 200);
    assert.deepEqual(
      await v1.json(),
      { id: full.id, ...without },
      "v1 PUT: null replaces with none",
    );
    // "" stays refused: an optional field is never stored empty.
    const empty = await book.create({ ...EXAMPLE_INPUT, [FIELD]: "" });
    assert.equal(await errorCode(empty), "invalid-field");

    // GraphQL: the input's null is absent too.
    const mutation =
      `mutation($input: AddressInput!) { createAddress(input: $input) { id ${FIELD} } }`;
    const answer = await (await graphql(base, { query: mutation, variables: { input: withNull } }))
      .json();
    assert.equal(answer.errors, undefined, JSON.stringify(answer));
    assert.equal(answer.data.createAddress[FIELD], null);
    const literal = await (await graphql(base, {
      query: `mutation { createAddress(input: { ${
        Object.entries(without).map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(", ")
      }, ${FIELD}: null }) { id ${FIELD} } }`,
    })).json();
    assert.equal(literal.errors, undefined, JSON.stringify(literal));
    const graphqlId = Number(literal.data.createAddress.id);
    assert.deepEqual(await (await book.get(graphqlId)).json(), { id: graphqlId, ...without });

    // Connect JSON (proto3 JSON: null is the default, absent) and binary Connect (unset).
    const rpc = await sendJson(
      `${base}/addresses.v1.AddressService/CreateAddress`,
      "POST",
      { address: { ...withNull } },
      {},
    );
    const message = await rpc.json();
    assert.equal(rpc.status, 200, JSON.stringify(message));
    assert.equal(message[FIELD] ?? "", "");
    const client = addressClient(connectTransport(base, "1.1"));
    const made = await client.createAddress({
      address: create(AddressSchema, { ...without } as Record<string, string>),
    });
    assert.equal((made as unknown as Record<string, string>)[FIELD], "");
    assert.deepEqual(await (await book.get(Number(made.id))).json(), {
      id: Number(made.id),
      ...without,
    });
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
