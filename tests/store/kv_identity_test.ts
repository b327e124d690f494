import assert from "node:assert/strict";
import { spawnServer } from "../support/server.ts";
import { waitFor } from "../support/process.ts";
import { waitForLine } from "../support/logs.ts";
import { addressBook, answerOf, named } from "../support/requests.ts";

async function readyStatus(base: string): Promise<{ status: number; code?: string }> {
  const { status, body } = await answerOf(await fetch(`${base}/readyz`));
  return { status, code: body.errors?.[0]?.error };
}

/** Asserts a create is refused the way a client can act on, and returns nothing acknowledged. */
async function assertRefused(base: string, name: string): Promise<void> {
  const response = await addressBook(base).create(named(name));
  assert.equal(response.status, 503);
  assert.equal(response.headers.get("retry-after"), "5");
  assert.equal((await response.json()).errors[0].error, "storage-unavailable");
}

Deno.test("KV file moved away under a running server: creates refused, readiness 503, back again when it returns; a restart finds every acknowledged address", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-identity-" });
  const kvPath = `${dir}/kv.sqlite3`;
  const env = { KV_PATH: kvPath, GRPC_PORT: "off" };
  try {
    const server = await spawnServer(env);
    const acknowledged = [];
    try {
      for (let i = 0; i < 3; i++) {
        acknowledged.push(await (await addressBook(server.httpUrl).create(named(`a${i}`))).json());
      }

      await Deno.rename(kvPath, `${dir}/elsewhere.sqlite3`);
      await assertRefused(server.httpUrl, "while away");
      assert.deepEqual(await readyStatus(server.httpUrl), {
        status: 503,
        code: "storage-unavailable",
      });
      await assertRefused(server.httpUrl, "still away");
      const lost = await waitForLine(server.lines, "kv file deleted");
      assert.equal(lost.level, "error");
      assert.equal(lost.path, kvPath);
      assert.equal(lost.writes, "refused");

      await Deno.rename(`${dir}/elsewhere.sqlite3`, kvPath);
      await waitFor("readiness once the file is back", async () => {
        return (await readyStatus(server.httpUrl)).status === 200 ? true : undefined;
      });
      const after = await addressBook(server.httpUrl).create(named("after"));
      assert.equal(after.status, 201);
      acknowledged.push(await after.json());
      assert.equal(
        server.lines().filter((l) => l.msg === "kv file deleted").length,
        1,
        "one line, not one per write",
      );
      const back = await waitForLine(server.lines, "kv file back");
      assert.ok((back.failures as number) >= 2, `refused writes counted: ${back.failures}`);
    } finally {
      assert.equal(await server.stop(), 0);
    }

    const again = await spawnServer(env);
    try {
      assert.deepEqual(await addressBook(again.httpUrl).listAll(), acknowledged);
    } finally {
      assert.equal(await again.stop(), 0);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("KV file replaced by a restore under a running server: creates refused until a restart, which serves the restore with ids going on", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-identity-" });
  const kvPath = `${dir}/kv.sqlite3`;
  const env = { KV_PATH: kvPath, GRPC_PORT: "off" };
  try {
    const server = await spawnServer(env);
    const acknowledged: { id: number }[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        acknowledged.push(await (await addressBook(server.httpUrl).create(named(`r${i}`))).json());
      }

      // A backup taken now (entry by entry, as a tool on a live KV would) and moved over the file.
      const restorePath = `${dir}/restore.sqlite3`;
      {
        using live = await Deno.openKv(kvPath);
        using restore = await Deno.openKv(restorePath);
        for await (const entry of live.list({ prefix: [] })) {
          await restore.set(entry.key, entry.value);
        }
      }
      const before = await Deno.stat(kvPath);
      await Deno.rename(restorePath, kvPath);

      await assertRefused(server.httpUrl, "into the old file");
      await assertRefused(server.httpUrl, "again");
      assert.deepEqual(await readyStatus(server.httpUrl), {
        status: 503,
        code: "storage-unavailable",
      });
      await waitForLine(server.lines, "kv file replaced");
      const lines = server.lines().filter((l) => l.msg === "kv file replaced");
      assert.equal(lines.length, 1);
      assert.equal(lines[0]!.path, kvPath);
      assert.deepEqual(lines[0]!.opened, { dev: before.dev, ino: before.ino });
      assert.notEqual((lines[0]!.found as { ino: number }).ino, before.ino);
    } finally {
      assert.equal(await server.stop(), 0);
    }

    const again = await spawnServer(env);
    try {
      assert.deepEqual(
        await addressBook(again.httpUrl).listAll(),
        acknowledged,
        "every acknowledged address",
      );
      const next = await (await addressBook(again.httpUrl).create(named("next"))).json();
      assert.equal(next.id, Math.max(...acknowledged.map((a) => a.id)) + 1, "ids go on");
    } finally {
      assert.equal(await again.stop(), 0);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
