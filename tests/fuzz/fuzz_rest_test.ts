/**
 * Property-based fuzzing of the REST side over real sockets (docs/fuzzing.md). Every answer:
 * no 5xx, no internals in the body, the error body its protocol promises; and the address book
 * changes only through successful writes, the catalogue never.
 */
import assert from "node:assert/strict";
import { fuzz } from "../support/fuzz.ts";
import { httpCase } from "../support/fuzz_http.ts";
import { type Address, applyWrite, checkAnswer, requestOf } from "../support/fuzz_rest.ts";
import { addressBook } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";

Deno.test("REST fuzz: random requests never get a 5xx or leak internals; state moves only by writes", async () => {
  const server = await startTestServer();
  const base = server.httpUrl;
  const api = addressBook(base);
  try {
    const catalogue = await (await fetch(`${base}/rest/books`)).text();
    const model = new Map<number, Address>();
    for (const city of ["Berlin", "Paris", "Rome"]) {
      const res = await api.create({ name: "Seed", city, postalCode: "12345" });
      const a = await res.json();
      model.set(a.id, a);
    }
    await fuzz("REST", 400, httpCase, async (c) => {
      const request = requestOf(base, c);
      if (!request) return;
      let res: Response;
      try {
        res = await fetch(request);
      } catch (error) {
        throw new Error(`${c.method} ${c.path.slice(0, 120)}: connection failed: ${error}`);
      }
      const text = new TextDecoder().decode(await res.arrayBuffer());
      const body = checkAnswer(c, res, text);
      applyWrite(model, c, res, body);
      const stored = await api.listAll();
      assert.deepEqual(
        stored,
        [...model.values()].sort((a, b) => a.id - b.id),
        `${c.method} ${c.path.slice(0, 80)} -> ${res.status} changed the address book`,
      );
    });
    assert.equal(await (await fetch(`${base}/rest/books`)).text(), catalogue);
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    assert.deepEqual(server.logs.filter((l) => l.msg === "unhandled error"), []);
  } finally {
    await server.close();
  }
});
