import assert from "node:assert/strict";
import { createAndRead, exerciseOnePort, serveMain } from "../support/served.ts";
import { accepts, freePort } from "../support/process.ts";

// `deno serve main.ts` with exactly the least privilege the README documents: read, env, net,
// and write on the KV file's directory only. No --allow-run/--allow-sys/--allow-ffi, so a child
// process, a second listener needing them, or a stray write would fail start-up or a request.
Deno.test("deno serve, least privilege: every single-port protocol, no second listener", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-serve-" });
  const grpcPort = freePort();
  const server = await serveMain({
    permissions: ["--allow-net", "--allow-env", "--allow-read", `--allow-write=${dir}`],
    env: { KV_PATH: `${dir}/kv.sqlite3`, GRPC_PORT: String(grpcPort) },
  });
  try {
    await exerciseOnePort(server.baseUrl);
    const id = await createAndRead(server.baseUrl, "Served");
    assert.ok(id >= 1);
    const listening = server.lines().find((l) => l.msg === "listening")!;
    assert.equal(listening.mode, "serve");
    assert.equal(listening.kv, `${dir}/kv.sqlite3`);
    assert.equal(await accepts(grpcPort), false, "no gRPC listener under deno serve");
    assert.doesNotMatch(server.output(), /NotCapable|PermissionDenied|Requires .* access/);
    assert.deepEqual(
      [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => !/^kv\.sqlite3/.test(n)),
      [],
    );
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("deno serve with KV_PATH=:memory: needs no write permission at all", async () => {
  const server = await serveMain({
    permissions: ["--allow-net", "--allow-env", "--allow-read"],
    env: { KV_PATH: ":memory:" },
  });
  try {
    await exerciseOnePort(server.baseUrl);
    assert.equal(await createAndRead(server.baseUrl, "In memory"), 1);
  } finally {
    await server.stop();
  }
});
