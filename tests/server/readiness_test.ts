import assert from "node:assert/strict";
import { checkContract } from "../support/contract.ts";
import { waitForLine } from "../support/logs.ts";
import { accepts, spawnMainOnFreePorts, statusOf, waitFor } from "../support/process.ts";

// Readiness is a property of the whole process: 200 only while the HTTP port and the gRPC port
// both serve, and only after the `listening` line was written (issue 10, defect 2).
Deno.test("readyz: 200 only once both listeners serve, 503 while the gRPC child restarts", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-ready-" });
  const server = spawnMainOnFreePorts({ KV_PATH: `${dir}/kv.sqlite3` });
  const grpcPort = server.grpcPort!;
  const readyz = `${server.baseUrl}/readyz`;
  checkContract(readyz);
  let code;
  try {
    // Polled as fast as it answers, from before the HTTP port accepts.
    const readyAt = await waitFor("readiness", async () => {
      const status = await statusOf(readyz);
      if (status !== undefined && status !== 200) assert.equal(status, 503);
      return status === 200 ? new Date().toISOString() : undefined;
    });
    assert.ok(await accepts(grpcPort), "ready, but the gRPC port does not accept");
    const listening = await waitForLine(server.lines, "listening");
    assert.ok(String(listening.time) <= readyAt, "the listening line comes before readiness");
    assert.equal(listening.grpc, `http://127.0.0.1:${grpcPort}`);

    // What Deno 2.9.6's nghttp2 abort does to the gRPC child, done on purpose.
    const child = server.lines().find((l) => l.msg === "grpc listening")!;
    Deno.kill(child.pid as number, "SIGKILL");
    await waitFor("readiness to turn 503", async () => {
      const status = await statusOf(readyz);
      return status === 503 ? true : undefined;
    });
    // From now on every 200 means the restarted child accepts.
    await waitFor("readiness after the restart", async () => {
      const status = await statusOf(readyz);
      assert.ok(status === 200 || status === 503, `readyz answered ${status}`);
      return status === 200 ? true : undefined;
    });
    assert.ok(await accepts(grpcPort), "ready again, but the gRPC port does not accept");
    // The supervisor passes the child's log on in blocks, so its line may follow readiness.
    await waitForLine(
      server.lines,
      (l) => l.msg === "grpc listening" && l.pid !== child.pid,
      "the restarted child's listening line",
    );
  } finally {
    code = await server.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  assert.equal(code, 0, "graceful stop");
});
