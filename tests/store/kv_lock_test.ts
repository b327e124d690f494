import assert from "node:assert/strict";
import { waitForLine } from "../support/logs.ts";
import { type MainProcess, spawnMainOnFreePorts, statusOf } from "../support/process.ts";

const HOLDER = new URL("../support/hold_kv_lock.ts", import.meta.url).pathname;

Deno.test("KV locked at start: the log names the lock, its holder and the path; start-up goes on once it is released", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-lock-" });
  const kvPath = `${dir}/kv.sqlite3`;
  {
    using kv = await Deno.openKv(kvPath);
    await kv.set(["made", "by the test"], true);
  }
  const holder = new Deno.Command(Deno.execPath(), {
    args: ["run", `--allow-read=${dir}`, `--allow-write=${dir}`, HOLDER, kvPath],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const holderOut = holder.stdout.getReader();
  let server: MainProcess | undefined;
  try {
    const first = await holderOut.read();
    assert.equal(new TextDecoder().decode(first.value).trim(), "locked");

    // The key written above makes it a KV from before layout versions: migrated at start.
    server = spawnMainOnFreePorts({ GRPC_PORT: "off", KV_PATH: kvPath, MIGRATE_ON_START: "true" });
    const line = await waitForLine(server.lines, "kv locked");
    assert.equal(line.level, "warn");
    assert.equal(line.waitedS, 0, "named before opening waits");
    assert.equal(line.path, kvPath);
    assert.equal(
      line.lock,
      `write lock on kv.sqlite3 (exclusive) held by pid ${holder.pid} (deno)`,
    );
    assert.equal(await statusOf(`${server.baseUrl}/readyz`), undefined, "not listening");

    await holder.stdin.close();
    assert.equal((await holder.status).code, 0);
    await waitForLine(server.lines, "listening", "start-up");
    assert.equal(await statusOf(`${server.baseUrl}/readyz`), 200);
    const released = server.lines().find((l) => l.msg === "kv lock released");
    assert.equal(released?.path, kvPath);
    assert.ok(
      server.lines().findIndex((l) => l.msg === "kv lock released") <
        server.lines().findIndex((l) => l.msg === "listening"),
    );
  } finally {
    try {
      holder.kill();
    } catch { /* released already */ }
    await holder.status;
    holderOut.releaseLock();
    await holder.stdout.cancel();
    if (server) assert.equal(await server.stop(), 0);
    await Deno.remove(dir, { recursive: true });
  }
});
