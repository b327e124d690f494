/**
 * Model-based test of the address book (docs/fuzzing.md): random sequences of create (POST, also
 * with an Idempotency-Key), put (PUT, version 1 and version 2 semantics), merge patch, delete,
 * get, list (with paging) and a restart on the same KV file, run against the real server and
 * against a plain in-memory model, compared after every step.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { FUZZ_SCALE, FUZZ_SEED } from "./support/fuzz.ts";
import { validAddress } from "./support/fuzz_http.ts";
import {
  type Address,
  addressBook,
  type AddressInput as Input,
  named,
  V2,
} from "./support/requests.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

/** The model: what the address book must hold, the ids the server generated, idempotency keys. */
interface Model {
  addresses: Map<number, Address>;
  generated: Set<number>;
  keys: Map<string, { body: string; answer: Address }>;
}

function newModel(): Model {
  return { addresses: new Map(), generated: new Set(), keys: new Map() };
}

/** A generated id (POST, v1 PUT of an absent id): held by no address, never handed out before. */
function assertFreshId(model: Model, id: number, what: string): void {
  assert.ok(Number.isSafeInteger(id) && id > 0, `${what} answered id ${id}`);
  assert.ok(!model.addresses.has(id), `${what} handed out id ${id}, which an address holds`);
  assert.ok(!model.generated.has(id), `${what} handed out id ${id} a second time`);
  model.generated.add(id);
}

/** The system under test: a server on a KV file that outlives restarts. */
interface Real {
  server: TestServer;
  kvPath: string;
}

function trimmed(input: Input): Input {
  return Object.fromEntries(Object.entries(input).map(([k, v]) => [k, v.trim()])) as Input;
}

/** Picks an id: one the model holds (by index), or one it does not (never used, or deleted). */
type IdChoice = { existing: true; index: number } | { existing: false; offset: number };

const idChoice: fc.Arbitrary<IdChoice> = fc.oneof(
  { weight: 3, arbitrary: fc.nat(50).map((index) => ({ existing: true as const, index })) },
  { weight: 1, arbitrary: fc.nat(5).map((offset) => ({ existing: false as const, offset })) },
);

function resolveId(model: Model, choice: IdChoice): number {
  const ids = [...model.addresses.keys()];
  if (choice.existing && ids.length > 0) return ids[choice.index % ids.length]!;
  // An id no address holds: a deleted or never-used one.
  for (let id = 1 + (choice.existing ? 0 : choice.offset);; id++) {
    if (!model.addresses.has(id)) return id;
  }
}

/** The address book of the server running now (a restart starts another). */
function api(real: Real) {
  return addressBook(real.server.httpUrl);
}

function sorted(model: Model): Address[] {
  return [...model.addresses.values()].sort((a, b) => a.id - b.id);
}

/** After every step: the server lists exactly the model. */
async function compare(model: Model, real: Real, step: string): Promise<void> {
  assert.deepEqual(await api(real).listAll(), sorted(model), `after ${step}`);
}

class Create implements fc.AsyncCommand<Model, Real> {
  constructor(readonly input: Input) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const res = await api(real).create(this.input);
    assert.equal(res.status, 201);
    const body = await res.json();
    assertFreshId(model, body.id, "POST");
    assert.deepEqual(body, { id: body.id, ...trimmed(this.input) });
    assert.equal(res.headers.get("location"), `/addresses/${body.id}`);
    model.addresses.set(body.id, body);
    await compare(model, real, this.toString());
  }
  toString = () => `create(${JSON.stringify(this.input)})`;
}

class Put implements fc.AsyncCommand<Model, Real> {
  constructor(readonly choice: IdChoice, readonly input: Input) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const id = resolveId(model, this.choice);
    const res = await api(real).put(id, this.input);
    const body = await res.json();
    const input = trimmed(this.input);
    const existing = model.addresses.get(id);
    if (existing) {
      // Version 1: every field from the body, but the name kept.
      assert.equal(res.status, 200);
      const updated = { ...input, id, name: existing.name };
      assert.deepEqual(body, updated);
      model.addresses.set(id, updated);
    } else {
      // Version 1 PUT, rule 2 (docs/http.md): stored as new with a generated id, not the path id.
      assert.equal(res.status, 201);
      assertFreshId(model, body.id, "PUT (v1) of an absent id");
      assert.deepEqual(body, { id: body.id, ...input });
      assert.equal(res.headers.get("location"), `/addresses/${body.id}`);
      model.addresses.set(body.id, body);
    }
    await compare(model, real, this.toString());
  }
  toString = () => `put(${JSON.stringify(this.choice)}, ${JSON.stringify(this.input)})`;
}

class PutV2 implements fc.AsyncCommand<Model, Real> {
  constructor(readonly choice: IdChoice, readonly input: Input) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const id = resolveId(model, this.choice);
    const res = await api(real).put(id, this.input, { "content-type": V2 });
    const body = await res.json();
    const expected = { id, ...trimmed(this.input) };
    // Version 2 (RFC 9110): replaced whole, name included (200), or created at the path id (201).
    assert.equal(res.status, model.addresses.has(id) ? 200 : 201);
    assert.equal(res.headers.get("content-type"), V2);
    assert.deepEqual(body, expected);
    model.addresses.set(id, expected);
    await compare(model, real, this.toString());
  }
  toString = () => `putV2(${JSON.stringify(this.choice)}, ${JSON.stringify(this.input)})`;
}

class Patch implements fc.AsyncCommand<Model, Real> {
  constructor(readonly choice: IdChoice, readonly patch: Partial<Input>) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const id = resolveId(model, this.choice);
    const res = await api(real).patch(id, this.patch);
    const existing = model.addresses.get(id);
    if (existing) {
      assert.equal(res.status, 200);
      const trimmedPatch = Object.fromEntries(
        Object.entries(this.patch).map(([k, v]) => [k, (v as string).trim()]),
      );
      const expected = { ...existing, ...trimmedPatch };
      assert.deepEqual(await res.json(), expected);
      model.addresses.set(id, expected);
    } else {
      assert.equal(res.status, 404);
      assert.equal((await res.json()).errors[0].error, "address-not-found");
    }
    await compare(model, real, this.toString());
  }
  toString = () => `patch(${JSON.stringify(this.choice)}, ${JSON.stringify(this.patch)})`;
}

class IdempotentCreate implements fc.AsyncCommand<Model, Real> {
  constructor(readonly key: string, readonly input: Input) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const text = JSON.stringify(this.input);
    const res = await api(real).create(text, { "idempotency-key": this.key });
    const body = await res.json();
    const first = model.keys.get(this.key);
    if (first === undefined) {
      assert.equal(res.status, 201);
      assertFreshId(model, body.id, "POST with a new Idempotency-Key");
      assert.deepEqual(body, { id: body.id, ...trimmed(this.input) });
      model.addresses.set(body.id, body);
      model.keys.set(this.key, { body: text, answer: body });
    } else if (first.body === text) {
      // The same key and body: the first answer again, nothing created.
      assert.equal(res.status, 201);
      assert.deepEqual(body, first.answer);
    } else {
      assert.equal(res.status, 422);
      assert.equal(body.errors[0].error, "idempotency-key-reused");
    }
    await compare(model, real, this.toString());
  }
  toString = () => `idempotentCreate(${this.key}, ${JSON.stringify(this.input)})`;
}

class Delete implements fc.AsyncCommand<Model, Real> {
  constructor(readonly choice: IdChoice) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const id = resolveId(model, this.choice);
    const res = await api(real).delete(id);
    if (model.addresses.has(id)) {
      assert.equal(res.status, 204);
      await res.body?.cancel();
      model.addresses.delete(id);
    } else {
      assert.equal(res.status, 404);
      assert.equal((await res.json()).errors[0].error, "address-not-found");
    }
    await compare(model, real, this.toString());
  }
  toString = () => `delete(${JSON.stringify(this.choice)})`;
}

class Get implements fc.AsyncCommand<Model, Real> {
  constructor(readonly choice: IdChoice) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const id = resolveId(model, this.choice);
    const res = await api(real).get(id);
    const expected = model.addresses.get(id);
    if (expected) {
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), expected);
    } else {
      assert.equal(res.status, 404);
      assert.equal((await res.json()).errors[0].error, "address-not-found");
    }
  }
  toString = () => `get(${JSON.stringify(this.choice)})`;
}

class List implements fc.AsyncCommand<Model, Real> {
  constructor(readonly limit: number) {}
  check = () => true;
  async run(model: Model, real: Real) {
    assert.deepEqual(await api(real).listAll(this.limit), sorted(model));
  }
  toString = () => `list(limit ${this.limit})`;
}

class Restart implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(model: Model, real: Real) {
    await real.server.close();
    real.server = await startTestServer({ KV_PATH: real.kvPath, GRPC_PORT: "off" });
    await compare(model, real, this.toString());
  }
  toString = () => "restart";
}

const commands = [
  fc.tuple(validAddress).map(([a]) => new Create(a)),
  fc.tuple(idChoice, validAddress).map(([c, a]) => new Put(c, a)),
  fc.tuple(idChoice, validAddress).map(([c, a]) => new PutV2(c, a)),
  fc.tuple(idChoice, validAddress).map(([c, a]) =>
    new Patch(
      c,
      Object.fromEntries(
        Object.entries(a).filter((_, i) => (c.existing ? c.index : c.offset) % 4 !== i),
      ),
    )
  ),
  fc.tuple(fc.constantFrom("k1", "k2", "k3"), fc.constantFrom(0, 1), validAddress).map((
    [k, same, a],
  ) => new IdempotentCreate(k, same === 0 ? named("Idem") : a)),
  idChoice.map((c) => new Delete(c)),
  idChoice.map((c) => new Get(c)),
  fc.integer({ min: 1, max: 7 }).map((n) => new List(n)),
  fc.constant(new Restart()),
];

Deno.test("address book model: random create/put/patch/delete/get/list/restart sequences match a model", async () => {
  const numRuns = Math.max(1, Math.round(30 * FUZZ_SCALE));
  let count = 0;
  let steps = 0;
  const property = fc.asyncProperty(
    fc.commands(commands, { maxCommands: 40, size: "+1" }),
    async (cmds) => {
      count++;
      const dir = await Deno.makeTempDir({ prefix: "books-model-" });
      const kvPath = `${dir}/kv.sqlite3`;
      const real: Real = {
        server: await startTestServer({ KV_PATH: kvPath, GRPC_PORT: "off" }),
        kvPath,
      };
      try {
        await fc.asyncModelRun(() => ({ model: newModel(), real }), cmds);
        steps += [...cmds].length;
      } finally {
        await real.server.close();
        await Deno.remove(dir, { recursive: true }).catch(() => {});
      }
    },
  );
  const path = Deno.env.get("FUZZ_PATH");
  try {
    await fc.assert(property, { seed: FUZZ_SEED, numRuns, ...(path ? { path } : {}) });
  } catch (error) {
    console.error(`\nMODEL FAILURE: replay with FUZZ_SEED=${FUZZ_SEED} (see the path above)\n`);
    throw error;
  } finally {
    console.log(`fuzz "address model": ${count} sequences, ${steps} commands, seed ${FUZZ_SEED}`);
  }
});
