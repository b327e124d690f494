/**
 * The passages of the README and docs/http.md that depend on an address's fields (the example,
 * the field rules, version 1 PUT's rule, what `null` does in a merge patch, what an
 * Idempotency-Key's replay compares) are what tools/generate_docs.ts writes from the table, and
 * what it writes names every field where it must. tests/lib/optional_field_test.ts runs the second
 * half with a table that has an optional field.
 */
import assert from "node:assert/strict";
import {
  ADDRESS_FIELD_NAMES,
  ADDRESS_FIELDS,
  type AddressField,
  type AddressFieldName,
  EXAMPLE_ADDRESS,
  OPTIONAL_FIELD_NAMES,
  V1_KEPT,
  V1_REPLACED,
} from "../lib/address.ts";
import { DOCUMENTS, passageNames, passages, staleDocs } from "../tools/generate_docs.ts";
import { IMPORT_MAP_ENV } from "./support/process.ts";

const FIELDS: Readonly<Record<AddressFieldName, AddressField>> = ADDRESS_FIELDS;

/** Under another table (tests/lib/optional_field_test.ts) the committed docs are not its own. */
const trial = Deno.env.get(IMPORT_MAP_ENV) !== undefined;

function passage(name: string): string {
  const text = passages().get(name);
  assert.ok(text !== undefined, name);
  return text;
}

function names(text: string): string[] {
  return [...text.matchAll(/`([A-Za-z]+)`/g)].map((match) => match[1]!)
    .filter((name) => name in FIELDS);
}

Deno.test({
  name: "README and docs/http.md say what the field table says (else: deno task generate)",
  ignore: trial,
  fn: async () => {
    assert.deepEqual(await staleDocs(), [], "run `deno task generate` and commit");
  },
});

Deno.test("every passage appears in the docs, and the docs name no other", async () => {
  const used = new Set<string>();
  for (const file of DOCUMENTS) {
    const found = passageNames(await Deno.readTextFile(new URL(`../${file}`, import.meta.url)));
    assert.ok(found.length > 0, file);
    for (const name of found) used.add(name);
  }
  assert.deepEqual([...used].sort(), [...passages().keys()].sort());
});

Deno.test("each passage names the fields the table gives it", () => {
  assert.deepEqual(JSON.parse(passage("example").slice(1, -1)), EXAMPLE_ADDRESS);
  // Every field with its bound, each optional one as optional.
  const rules = passage("rules");
  for (const name of ADDRESS_FIELD_NAMES) {
    const at = rules.indexOf(`\`${name}\``);
    assert.ok(at >= 0, `rules name ${name}`);
    assert.match(rules.slice(at), new RegExp(`at most ${FIELDS[name].maxLength} characters`));
    if (FIELDS[name].pattern) assert.ok(rules.includes(FIELDS[name].pattern!.message), name);
  }
  assert.equal(/optional/.test(rules), OPTIONAL_FIELD_NAMES.length > 0);
  assert.deepEqual(names(passage("v1-replaced")), V1_REPLACED);
  assert.deepEqual(names(passage("v1-kept")), V1_KEPT);
  const v1 = passage("v1-put");
  assert.deepEqual(names(v1.split("set from the body")[0]!), V1_REPLACED);
  assert.deepEqual(names(v1.split("saved")[1] ?? ""), V1_KEPT);
  for (const name of OPTIONAL_FIELD_NAMES) {
    if (V1_REPLACED.includes(name)) assert.match(v1, new RegExp(`\`${name}\`.*removed when`));
  }
  assert.deepEqual(names(passage("same-body")).slice(0, ADDRESS_FIELD_NAMES.length), [
    ...ADDRESS_FIELD_NAMES,
  ]);
  const nullRule = passage("merge-patch-null");
  for (const name of OPTIONAL_FIELD_NAMES) assert.ok(nullRule.includes(name), name);
});
