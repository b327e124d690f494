import assert from "node:assert/strict";
import { addressBook, answerOf } from "../support/requests.ts";
import { exerciseOnePort, serveMain } from "../support/served.ts";

const CREATES = 400;

// Two workers on one KV file, each with its own group commit: ids stay unique because every
// batch checks the shared counter; contention past the retry budget is a 503, never a 500 or a
// lost write.
Deno.test("deno serve --parallel, 2 workers: 400 concurrent creates, unique ids, none lost", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-parallel-" });
  const server = await serveMain({
    permissions: ["--allow-net", "--allow-env", "--allow-read", `--allow-write=${dir}`],
    env: { KV_PATH: `${dir}/kv.sqlite3`, LOG_LEVEL: "warn" },
    workers: 2,
  });
  try {
    await exerciseOnePort(server.baseUrl);
    const api = addressBook(server.baseUrl);
    const replies = await Promise.all(
      Array.from({ length: CREATES }, async (_, i) => {
        const name = `Worker test ${i}`;
        const { status, headers, body } = await answerOf(
          await api.create({ name, city: "Accra", postalCode: "00233" }),
        );
        return { status, retryAfter: headers.get("retry-after"), body, name };
      }),
    );
    for (const reply of replies) {
      if (reply.status === 503) {
        assert.equal(reply.retryAfter, "1");
        assert.equal(reply.body.errors[0].error, "service-unavailable");
      } else assert.equal(reply.status, 201, JSON.stringify(reply.body));
    }
    const acknowledged = replies.filter((r) => r.status === 201);
    assert.ok(acknowledged.length > 0);
    const ids = acknowledged.map((r) => r.body.id as number);
    assert.equal(new Set(ids).size, ids.length, "ids are unique across workers");
    for (const reply of acknowledged) assert.equal(reply.body.name, reply.name);

    // Every acknowledged create is stored, and nothing else (a 503 wrote nothing).
    const stored = await api.listAll(100);
    assert.deepEqual(
      stored.map((a) => a.id).toSorted((a, b) => a - b),
      ids.toSorted((a, b) => a - b),
    );
    const byId = new Map(stored.map((a) => [a.id, a.name]));
    for (const reply of acknowledged) assert.equal(byId.get(reply.body.id), reply.name);
    console.log(
      `${acknowledged.length} of ${CREATES} created, ${CREATES - acknowledged.length} answered 503`,
    );
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
