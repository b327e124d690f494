/**
 * Every field of an address (lib/address.ts, ADDRESS_FIELDS) survives every path an address
 * takes: create, read, list, PUT version 1 and 2, PATCH, the owner's export, the operator's
 * export and import, and an idempotent replay (which must also tell apart bodies that differ in
 * any one field). The test walks the module's table, so a field added there is covered here
 * without a change; a path that copies or compares fields by hand and misses it fails.
 */
import assert from "node:assert/strict";
import {
  ADDRESS_FIELD_NAMES,
  ADDRESS_FIELDS,
  type AddressField,
  type AddressFieldName,
  AddressInputSchema,
  OPTIONAL_FIELD_NAMES,
  REQUIRED_FIELD_NAMES,
} from "../../lib/address.ts";
import { exportKv } from "../../store/backup/export.ts";
import { BackupLineError } from "../../store/backup/format.ts";
import { importKv, ImportRefused } from "../../store/backup/import.ts";
import { CURRENT_LAYOUT, LAYOUT_KEY } from "../../store/layout/layout.ts";
import {
  type AddressDoor,
  graphqlDoor,
  restDoor,
  rpcDoor,
  type RpcFraming,
  rpcTransport,
} from "../support/address_doors.ts";
import { withKv } from "../support/kv_tools.ts";
import {
  type Address,
  type AddressBook,
  addressBook,
  type AddressInput,
  answerOf,
  errorCode,
  type Fields,
  idempotencyKey,
  V2,
} from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";

/** A valid value of `name` other than `value` (the field's rules decide what is valid). */
function otherValue(name: AddressFieldName, value: string): string {
  const reversed = [...value].reverse().join("");
  const candidates = [
    `${value} 2`,
    `2 ${value}`,
    reversed,
    value.toLowerCase(),
    value.toUpperCase(),
    `${value.slice(0, -1)}2`,
    `${value.slice(0, -1)}A`,
  ];
  const other = candidates.find((candidate) =>
    candidate !== value && AddressInputSchema.shape[name].safeParse(candidate).data === candidate
  );
  assert.ok(other !== undefined, `no second valid value of ${name} derived from "${value}"`);
  return other;
}

/** Every field, optional ones included, at its example. */
const FULL = Object.fromEntries(
  ADDRESS_FIELD_NAMES.map((name) => [name, ADDRESS_FIELDS[name].example]),
) as AddressInput;

/** Every field at another valid value. */
const OTHER = Object.fromEntries(
  ADDRESS_FIELD_NAMES.map((name) => [name, otherValue(name, FULL[name]!)]),
) as AddressInput;

/** `input` without the field `name` (an optional one). */
function without<T extends AddressInput>(input: T, name: AddressFieldName): T {
  const { [name]: _, ...rest } = input;
  return rest as T;
}

/** Reads `id` and asserts it is stored exactly as `expected`. */
async function assertStored(api: AddressBook, expected: Address, what: string): Promise<void> {
  const read = await answerOf(await api.get(expected.id));
  assert.equal(read.status, 200, what);
  assert.deepEqual(read.body, expected, `${what}: read`);
  const listed = (await api.listAll()).find((a) => a.id === expected.id);
  assert.deepEqual(listed, expected, `${what}: list`);
}

Deno.test("the field table gives a full and an other value of every field", () => {
  assert.ok(ADDRESS_FIELD_NAMES.length > 0);
  assert.deepEqual(
    [...REQUIRED_FIELD_NAMES, ...OPTIONAL_FIELD_NAMES].sort(),
    [
      ...ADDRESS_FIELD_NAMES,
    ].sort(),
  );
  assert.ok(AddressInputSchema.safeParse(FULL).success);
  assert.ok(AddressInputSchema.safeParse(OTHER).success);
  for (const name of ADDRESS_FIELD_NAMES) assert.notEqual(OTHER[name], FULL[name], name);
});

Deno.test("every field survives create, read, list, PUT v1 and v2, PATCH and the owner's export", async (t) => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  const api = addressBook(server.httpUrl);
  try {
    let current!: Address;
    await t.step("create, read and list", async () => {
      const created = await answerOf(await api.create(FULL));
      assert.equal(created.status, 201);
      current = { id: created.body.id, ...FULL };
      assert.deepEqual(created.body, current);
      await assertStored(api, current, "create");
    });

    await t.step("PUT version 1: every field replaced but the name", async () => {
      const put = await answerOf(await api.put(current.id, OTHER));
      assert.equal(put.status, 200);
      current = { ...OTHER, id: current.id, name: current.name };
      assert.deepEqual(put.body, current);
      await assertStored(api, current, "PUT v1");
      // Of an absent id: stored whole under a generated id.
      const created = await answerOf(await api.put(999_999, FULL));
      assert.equal(created.status, 201);
      assert.deepEqual(created.body, { id: created.body.id, ...FULL });
      await assertStored(api, created.body, "PUT v1 of an absent id");
    });

    await t.step("PUT version 2: every field replaced, or created at the id", async () => {
      const put = await answerOf(await api.put(current.id, FULL, { "content-type": V2 }));
      assert.equal(put.status, 200);
      current = { id: current.id, ...FULL };
      assert.deepEqual(put.body, current);
      await assertStored(api, current, "PUT v2");
      const created = await answerOf(await api.put(777_777, OTHER, { "content-type": V2 }));
      assert.equal(created.status, 201);
      assert.deepEqual(created.body, { id: 777_777, ...OTHER });
      await assertStored(api, created.body, "PUT v2 of an absent id");
    });

    await t.step("PUT without an optional field removes it", async () => {
      for (const name of OPTIONAL_FIELD_NAMES) {
        for (const type of [{}, { "content-type": V2 }] as Fields[]) {
          const put = await answerOf(await api.put(current.id, without(FULL, name), type));
          assert.equal(put.status, 200, name);
          assert.deepEqual(put.body, without(current, name), name);
          await assertStored(api, put.body, `PUT without ${name}`);
          const back = await answerOf(await api.put(current.id, FULL, { "content-type": V2 }));
          assert.deepEqual(back.body, current);
        }
      }
    });

    await t.step(
      "PATCH: each field alone, the others kept; null removes an optional one",
      async () => {
        const empty = await answerOf(await api.patch(current.id, {}));
        assert.deepEqual(empty.body, current, "an empty patch");
        for (const name of ADDRESS_FIELD_NAMES) {
          const patched = await answerOf(await api.patch(current.id, { [name]: OTHER[name] }));
          assert.equal(patched.status, 200, name);
          current = { ...current, [name]: OTHER[name] };
          assert.deepEqual(patched.body, current, `PATCH ${name}`);
          await assertStored(api, current, `PATCH ${name}`);
        }
        for (const name of REQUIRED_FIELD_NAMES) {
          const refused = await api.patch(current.id, { [name]: null });
          assert.equal(refused.status, 400, name);
          assert.equal(await errorCode(refused), "invalid-field");
        }
        for (const name of OPTIONAL_FIELD_NAMES) {
          const removed = await answerOf(await api.patch(current.id, { [name]: null }));
          assert.equal(removed.status, 200, name);
          assert.deepEqual(removed.body, without(current, name), `PATCH ${name}: null`);
          await assertStored(api, removed.body, `PATCH ${name}: null`);
          const back = await answerOf(await api.patch(current.id, { [name]: current[name] }));
          assert.deepEqual(back.body, current);
        }
      },
    );

    await t.step("the owner's export, NDJSON and JSON", async () => {
      const stored = await api.listAll();
      const lines = (await (await api.export()).text()).trim().split("\n").map((l) =>
        JSON.parse(l)
      );
      assert.deepEqual(lines, stored);
      const json = await api.export({ accept: "application/json" });
      assert.deepEqual((await json.json()).addresses, stored);
    });
  } finally {
    await server.close();
  }
});

// A field's own cross-style test: the same operation through every door of
// tests/support/address_doors.ts, each answer compared. A field with a rule the table cannot
// state gets one like it.
Deno.test("every field's rules refuse alike in every style, and an optional field may be left out", async () => {
  const server = await startTestServer();
  const framings: RpcFraming[] = [
    "gRPC",
    "Connect (HTTP port)",
    "Connect JSON (HTTP port)",
    "gRPC-Web (HTTP port)",
  ];
  const doors: AddressDoor[] = [
    restDoor(server.httpUrl),
    graphqlDoor(server.httpUrl),
    ...framings.map((framing) => rpcDoor(rpcTransport(server, framing), framing)),
  ];
  try {
    const created = await doors[0]!.create(FULL);
    assert.ok(created.ok);
    const stored = created.value.address;
    for (const name of ADDRESS_FIELD_NAMES) {
      const { maxLength, pattern } = ADDRESS_FIELDS[name] as AddressField;
      const bad = ["", " ", "x".repeat(maxLength + 1), ...(pattern ? ["a!b"] : [])];
      for (const door of doors) {
        for (const value of bad) {
          const what = `${door.style}: ${name} ${JSON.stringify(value.slice(0, 10))}`;
          for (
            const outcome of [
              await door.create({ ...FULL, [name]: value }),
              await door.replace(stored.id, { ...FULL, [name]: value }),
              await door.update(stored.id, { [name]: value }),
            ]
          ) {
            assert.deepEqual(
              outcome.ok ? "stored" : { code: outcome.code, problems: outcome.problems },
              { code: "invalid-field", problems: 1 },
              what,
            );
          }
        }
      }
    }
    for (const name of OPTIONAL_FIELD_NAMES) {
      for (const door of doors) {
        const left = await door.create(without(FULL, name));
        assert.ok(left.ok, `${door.style}: ${name} left out`);
        assert.deepEqual(left.value.address, { id: left.value.address.id, ...without(FULL, name) });
      }
    }
    const read = await doors[0]!.get(stored.id);
    assert.deepEqual(read.ok && read.value.address, stored, "the refusals changed nothing");
  } finally {
    await server.close();
  }
});

Deno.test("an Idempotency-Key replays a body with every field, and any one field changed is 422", async () => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  const api = addressBook(server.httpUrl);
  try {
    const first = await answerOf(await api.create(FULL, idempotencyKey("k")));
    assert.equal(first.status, 201);
    assert.deepEqual(first.body, { id: first.body.id, ...FULL });
    const replay = await answerOf(await api.create(FULL, idempotencyKey("k")));
    assert.equal(replay.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(replay.body, first.body);
    const changed: [string, AddressInput][] = [
      ...ADDRESS_FIELD_NAMES.map((name): [string, AddressInput] => [
        `${name} changed`,
        { ...FULL, [name]: OTHER[name] },
      ]),
      ...OPTIONAL_FIELD_NAMES.map((name): [string, AddressInput] => [
        `${name} left out`,
        without(FULL, name),
      ]),
    ];
    for (const [what, body] of changed) {
      const res = await api.create(body, idempotencyKey("k"));
      assert.equal(res.status, 422, what);
      assert.equal(await errorCode(res), "idempotency-key-reused", what);
    }
    assert.deepEqual(await api.listAll(), [first.body], "nothing else was created");
  } finally {
    await server.close();
  }
});

Deno.test("backup: every field survives export and import; an address differing in any one field is a conflict", async () => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  const api = addressBook(server.httpUrl);
  const stored: Address[] = [];
  let text = "";
  try {
    for (const input of [FULL, OTHER, ...OPTIONAL_FIELD_NAMES.map((n) => without(FULL, n))]) {
      stored.push((await answerOf(await api.create(input))).body);
    }
    await withKv(server.kvPath, (kv) =>
      exportKv(kv, "source", (chunk) => {
        text += chunk;
        return Promise.resolve();
      }));
  } finally {
    await server.close();
  }
  const file = () => Promise.resolve(new Blob([text]).stream());
  const dir = await Deno.makeTempDir({ prefix: "books-fields-" });
  try {
    const target = `${dir}/target.sqlite3`;
    const summary = await withKv(target, (kv) => importKv(kv, "target", file));
    assert.equal(summary.written, stored.length);
    const moved = await startTestServer({ GRPC_PORT: "off", KV_PATH: target });
    try {
      assert.deepEqual(await addressBook(moved.httpUrl).listAll(), stored);
    } finally {
      await moved.shutdown();
    }
    // The same file again: every address already there.
    const again = await withKv(target, (kv) => importKv(kv, "target", file));
    assert.equal(again.present, stored.length);

    // A member this version does not know (a newer version's field) is refused, not dropped.
    const lines = text.split("\n");
    const second = JSON.parse(lines[1]!);
    lines[1] = JSON.stringify({ ...second, address: { ...second.address, fieldOfTomorrow: "x" } });
    const newer = () => Promise.resolve(new Blob([lines.join("\n")]).stream());
    await withKv(":memory:", async (kv) => {
      await assert.rejects(
        importKv(kv, "target", newer),
        (e) => e instanceof BackupLineError && e.line === 2 && /fieldOfTomorrow/.test(e.message),
      );
    });

    // A target holding the first address with one field another: not already there.
    const first = stored[0]!;
    const variants = [
      ...ADDRESS_FIELD_NAMES.map((name) => ({ ...first, [name]: OTHER[name] })),
      ...OPTIONAL_FIELD_NAMES.map((name) => without(first, name)),
    ];
    for (const variant of variants) {
      await withKv(":memory:", async (kv) => {
        await kv.set(LAYOUT_KEY, { version: CURRENT_LAYOUT });
        await kv.set(["addresses", first.id], { v: CURRENT_LAYOUT, owner: "", address: variant });
        await assert.rejects(importKv(kv, "target", file), ImportRefused, JSON.stringify(variant));
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
