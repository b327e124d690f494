import assert from "node:assert/strict";
import { createAndRead, exerciseOnePort, serveMain } from "../support/served.ts";
import { accepts, freePort, spawnMainOnFreePorts, untilStatus } from "../support/process.ts";
import { checkContract } from "../support/contract.ts";

/** Where Deno keeps an origin's storage; `Deno.openKv()` without a path opens a file there. */
async function originStorage(origin: string): Promise<string> {
  const info = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"] }).output();
  const root = JSON.parse(new TextDecoder().decode(info.stdout)).originStorage as string;
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(origin));
  return `${root}/${
    Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, "0")).join("")
  }`;
}

// Deno Deploy, simulated: DENO_DEPLOYMENT_ID is set and the process has no write permission at
// all. KV is `Deno.openKv()` without a path: on Deploy the platform's; locally Deno opens a file
// in its own origin storage (DENO_DIR/location_data/<sha256 of the origin>), which the runtime
// writes itself and which needs no permission. `--location` gives the simulation an origin of
// its own, so every run starts empty and the file is removed afterwards.
Deno.test("Deploy simulation: platform KV, one port, no child, no file writes", async () => {
  const cwd = await Deno.makeTempDir({ prefix: "books-deploy-" });
  const origin = `http://${crypto.randomUUID()}.deploy.test`;
  const storage = await originStorage(origin);
  const grpcPort = freePort();
  const server = await serveMain({
    flags: ["--location", origin],
    permissions: ["--allow-net", "--allow-env", "--allow-read"],
    // KV_PATH names a file here on purpose: on Deploy it is ignored for the platform's KV.
    env: {
      DENO_DEPLOYMENT_ID: "simulated",
      KV_PATH: "data/kv.sqlite3",
      GRPC_PORT: String(grpcPort),
    },
    cwd,
  });
  try {
    await exerciseOnePort(server.baseUrl);
    assert.equal(await createAndRead(server.baseUrl, "Deployed"), 1);
    const listening = server.lines().find((l) => l.msg === "listening")!;
    assert.equal(listening.mode, "deploy");
    assert.equal(listening.kv, "platform");
    assert.equal(await accepts(grpcPort), false, "no second listener on Deploy");
    assert.deepEqual([...Deno.readDirSync(cwd)], [], "nothing written next to the process");
    assert.ok(Deno.statSync(`${storage}/kv.sqlite3`).isFile, "the origin's KV holds the data");
  } finally {
    await server.stop();
    await Deno.remove(cwd, { recursive: true }).catch(() => {});
    await Deno.remove(storage, { recursive: true }).catch(() => {});
  }
});

// A host that runs the module (`deno run`) instead of serving its default export gets the same
// single port: main.ts hands the edge to Deno.serve itself, and still starts no gRPC listener.
Deno.test("Deploy simulation under deno run: one port, no gRPC child", async () => {
  const cwd = await Deno.makeTempDir({ prefix: "books-deploy-run-" });
  const origin = `http://${crypto.randomUUID()}.deploy.test`;
  const storage = await originStorage(origin);
  const grpcPort = freePort();
  const server = spawnMainOnFreePorts({
    DENO_DEPLOYMENT_ID: "simulated",
    GRPC_PORT: String(grpcPort),
  }, {
    flags: ["--config", new URL("../../deno.json", import.meta.url).pathname, "--location", origin],
    permissions: ["--allow-net", "--allow-env", "--allow-read"],
    cwd,
  });
  const baseUrl = server.baseUrl;
  checkContract(baseUrl);
  try {
    await untilStatus(`${baseUrl}/readyz`, 200, "readiness");
    await exerciseOnePort(baseUrl);
    assert.equal(await createAndRead(baseUrl, "Deployed"), 1);
    assert.equal(await accepts(grpcPort), false, "no second listener on Deploy");
    assert.deepEqual([...Deno.readDirSync(cwd)], [], "nothing written next to the process");
  } finally {
    await server.stop();
    await Deno.remove(cwd, { recursive: true }).catch(() => {});
    await Deno.remove(storage, { recursive: true }).catch(() => {});
  }
});
