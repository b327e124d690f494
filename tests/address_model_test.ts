/**
 * Model-based test of the address book (docs/fuzzing.md): random sequences of create (POST),
 * put (PUT, version 1 semantics), delete, get, list (with paging) and a restart on the same KV
 * file, run against the real server and against a plain in-memory model, compared after every
 * step.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { FUZZ_SCALE, FUZZ_SEED } from "./support/fuzz.ts";
import { validAddress } from "./support/fuzz_http.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

type Input = { name: string; city: string; postalCode: string };
type Address = Input & { id: number };

/** The model: what the address book must hold, and every id ever handed out. */
interface Model {
  addresses: Map<number, Address>;
  maxId: number;
}

/** The system under test: a server on a KV file that outlives restarts. */
interface Real {
  server: TestServer;
  kvPath: string;
}

const JSON_TYPE = { "content-type": "application/json" };

function trimmed(input: Input): Input {
  return { name: input.name.trim(), city: input.city.trim(), postalCode: input.postalCode.trim() };
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

async function listAll(base: string, limit: number): Promise<Address[]> {
  const all: Address[] = [];
  let cursor: string | null = null;
  for (let pages = 0;; pages++) {
    assert.ok(pages < 1000, "paging does not end");
    const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
    const res = await fetch(`${base}/addresses?limit=${limit}${query}`);
    assert.equal(res.status, 200);
    const page = await res.json();
    assert.ok(page.addresses.length <= limit, "a page is longer than its limit");
    all.push(...page.addresses);
    cursor = page.nextCursor;
    if (cursor === null) return all;
  }
}

function sorted(model: Model): Address[] {
  return [...model.addresses.values()].sort((a, b) => a.id - b.id);
}

/** After every step: the server lists exactly the model. */
async function compare(model: Model, real: Real, step: string): Promise<void> {
  assert.deepEqual(await listAll(real.server.httpUrl, 500), sorted(model), `after ${step}`);
}

class Create implements fc.AsyncCommand<Model, Real> {
  constructor(readonly input: Input) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const res = await fetch(`${real.server.httpUrl}/addresses`, {
      method: "POST",
      headers: JSON_TYPE,
      body: JSON.stringify(this.input),
    });
    assert.equal(res.status, 201);
    const body = await res.json();
    assert.ok(body.id > model.maxId, `POST handed out id ${body.id}, not above ${model.maxId}`);
    assert.deepEqual(body, { id: body.id, ...trimmed(this.input) });
    assert.equal(res.headers.get("location"), `/addresses/${body.id}`);
    model.addresses.set(body.id, body);
    model.maxId = body.id;
    await compare(model, real, this.toString());
  }
  toString = () => `create(${JSON.stringify(this.input)})`;
}

class Put implements fc.AsyncCommand<Model, Real> {
  constructor(readonly choice: IdChoice, readonly input: Input) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const id = resolveId(model, this.choice);
    const res = await fetch(`${real.server.httpUrl}/addresses/${id}`, {
      method: "PUT",
      headers: JSON_TYPE,
      body: JSON.stringify(this.input),
    });
    const body = await res.json();
    const input = trimmed(this.input);
    const existing = model.addresses.get(id);
    if (existing) {
      // Spec 4.6 rule 1: city and postalCode from the body, the name kept.
      assert.equal(res.status, 200);
      const updated = { ...existing, city: input.city, postalCode: input.postalCode };
      assert.deepEqual(body, updated);
      model.addresses.set(id, updated);
    } else {
      // Spec 4.6 rule 2: stored as a new address with a generated id, not the path id.
      assert.equal(res.status, 201);
      assert.ok(body.id > model.maxId, `PUT created id ${body.id}, not above ${model.maxId}`);
      assert.deepEqual(body, { id: body.id, ...input });
      assert.equal(res.headers.get("location"), `/addresses/${body.id}`);
      model.addresses.set(body.id, body);
      model.maxId = body.id;
    }
    await compare(model, real, this.toString());
  }
  toString = () => `put(${JSON.stringify(this.choice)}, ${JSON.stringify(this.input)})`;
}

class Delete implements fc.AsyncCommand<Model, Real> {
  constructor(readonly choice: IdChoice) {}
  check = () => true;
  async run(model: Model, real: Real) {
    const id = resolveId(model, this.choice);
    const res = await fetch(`${real.server.httpUrl}/addresses/${id}`, { method: "DELETE" });
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
    const res = await fetch(`${real.server.httpUrl}/addresses/${id}`);
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
    assert.deepEqual(await listAll(real.server.httpUrl, this.limit), sorted(model));
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
  idChoice.map((c) => new Delete(c)),
  idChoice.map((c) => new Get(c)),
  fc.integer({ min: 1, max: 7 }).map((n) => new List(n)),
  fc.constant(new Restart()),
];

Deno.test("address book model: random create/put/delete/get/list/restart sequences match a model", async () => {
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
        await fc.asyncModelRun(() => ({ model: { addresses: new Map(), maxId: 0 }, real }), cmds);
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
