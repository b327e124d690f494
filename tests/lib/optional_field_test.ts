/**
 * The day an optional field is added, the tests must already be right about it. The table has
 * none yet, so this runs the tests that walk the table (the field walk, the backup's rules, the
 * model of every style, the gRPC-against-REST fuzz, the GraphQL input fuzz, the AddressService
 * tests, the docs' passages) again, with an optional field (`country`, as the issue's newcomer
 * added it) put in place by an import map (tests/support/optional_field.ts): the table, the
 * Address message with the field as `optional string`, the GraphQL documents regenerated; the
 * servers and tools they start run under the same map. The docs' check must then fail: the
 * committed passages are the real table's.
 */
import assert from "node:assert/strict";
import { TRIAL_FIELD, writeTrial } from "../support/optional_field.ts";
import { IMPORT_MAP_ENV } from "../support/process.ts";

const ROOT = new URL("../../", import.meta.url);

/** The test files run with the field (paths from the root). */
const WITH_FIELD = [
  "tests/lib/address_fields_test.ts",
  "tests/store/backup_rules_test.ts",
  "tests/fuzz/address_model_test.ts",
  "tests/fuzz/fuzz_address_rpc_test.ts",
  "tests/fuzz/fuzz_graphql_inputs_test.ts",
  "tests/graphql/graphql_drift_test.ts",
  "tests/rpc/rpc_addresses_test.ts",
  "tests/docs_fields_test.ts",
];

async function deno(args: string[], map: string): Promise<{ ok: boolean; out: string }> {
  const run = await new Deno.Command(Deno.execPath(), {
    args: [
      args[0]!,
      "--config",
      new URL("deno.json", ROOT).pathname,
      `--import-map=${map}`,
      ...args.slice(1),
    ],
    cwd: ROOT,
    env: { [IMPORT_MAP_ENV]: map, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { ok: run.success, out: decoder.decode(run.stdout) + decoder.decode(run.stderr) };
}

Deno.test(`with an optional field (${TRIAL_FIELD.name}) in the table, the address tests of every style hold`, async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-optional-field-" });
  try {
    const map = await writeTrial(dir);
    const probe = await deno(["run", "-A", "tests/support/optional_field.ts", "--probe"], map);
    assert.ok(probe.ok, probe.out);
    const seen = JSON.parse(probe.out.trim().split("\n").at(-1)!);
    assert.ok(seen.optional.includes(TRIAL_FIELD.name), "the table");
    assert.equal(seen.proto?.presence, true, "the Address message: optional string");
    assert.equal(seen.graphql, true, "the GraphQL documents");

    // Type-checking is skipped: the REST client's generated types do not have the field.
    const run = await deno(["test", "--no-check", "-A", ...WITH_FIELD], map);
    const summary = run.out.trim().split("\n").filter((l) => /^(ok|FAILED) \|/.test(l)).at(-1);
    console.log(`with ${TRIAL_FIELD.name}: ${summary}`);
    assert.ok(run.ok, run.out.slice(-12_000));

    const docs = await deno(["run", "-A", "tools/generate_docs.ts", "--check"], map);
    assert.ok(!docs.ok, "the docs' check passed with a field the docs do not name");
    assert.match(
      docs.out,
      /README\.md, docs\/http\.md: the passages about an address's fields differ/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
