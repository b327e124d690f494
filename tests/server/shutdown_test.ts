import assert from "node:assert/strict";
import { waitForLine } from "../support/logs.ts";
import {
  accepts,
  runMain,
  spawnMainOnFreePorts,
  statusOf,
  untilStatus,
} from "../support/process.ts";
import { addressBook } from "../support/requests.ts";
import { COPY_MS } from "../../lib/signals.ts";

/** Rejects when the process has not exited within `ms`: a bound, not a measurement. */
function exitWithin(exited: Promise<number>, ms: number): Promise<number> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    exited.finally(() => clearTimeout(timer)),
    new Promise<number>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`still running after ${ms} ms`)), ms);
    }),
  ]);
}

Deno.test("SIGTERM: readiness turns 503 at once, both listeners keep serving through the drain window, a second signal ends it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-drain-" });
  const server = spawnMainOnFreePorts({
    KV_PATH: `${dir}/kv.sqlite3`,
    SHUTDOWN_DRAIN_S: "3600",
  });
  try {
    await untilStatus(`${server.baseUrl}/readyz`, 200, "readiness");
    Deno.kill(server.pid, "SIGTERM");
    await untilStatus(`${server.baseUrl}/readyz`, 503, "readiness to turn 503");
    const ready = await fetch(`${server.baseUrl}/readyz`);
    assert.equal(ready.status, 503);
    assert.equal(ready.headers.get("retry-after"), "1");
    assert.match((await ready.json()).errors[0].detail, /shutting down/);
    // Still serving, reads and writes, on both listeners.
    assert.equal(await statusOf(`${server.baseUrl}/rest/books`), 200);
    const created = await addressBook(server.baseUrl).create({
      name: "Late",
      city: "Köln",
      postalCode: "50667",
    });
    assert.equal(created.status, 201);
    assert.ok(await accepts(server.grpcPort!), "the gRPC listener accepts during the drain");
    const draining = server.lines().find((l) => l.msg === "draining");
    assert.equal(draining?.drainMs, 3_600_000);
    assert.equal(server.lines().some((l) => l.msg === "stopped"), false);

    // Sooner, a signal is taken for a copy of the first (lib/signals.ts).
    await new Promise((resolve) => setTimeout(resolve, COPY_MS));
    Deno.kill(server.pid, "SIGTERM");
    assert.equal(await exitWithin(server.exited, 30_000), 0, "a second signal ends the drain");
    assert.ok(server.lines().some((l) => l.msg === "stopped"));
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("SIGTERM with a short drain window stops by itself; SIGINT stops without one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-drain-" });
  try {
    const short = spawnMainOnFreePorts({
      KV_PATH: `${dir}/a.sqlite3`,
      SHUTDOWN_DRAIN_S: "1",
      GRPC_PORT: "off",
    });
    await waitForLine(short.lines, "listening");
    Deno.kill(short.pid, "SIGTERM");
    assert.equal(await exitWithin(short.exited, 30_000), 0);
    const msgs = short.lines().map((l) => l.msg);
    assert.ok(msgs.indexOf("draining") >= 0 && msgs.indexOf("draining") < msgs.indexOf("stopped"));

    const interactive = spawnMainOnFreePorts({
      KV_PATH: `${dir}/b.sqlite3`,
      SHUTDOWN_DRAIN_S: "3600",
    });
    await waitForLine(interactive.lines, "listening");
    Deno.kill(interactive.pid, "SIGINT");
    assert.equal(await exitWithin(interactive.exited, 30_000), 0);
    assert.equal(interactive.lines().some((l) => l.msg === "draining"), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a bad SHUTDOWN_DRAIN_S stops start-up with one line naming it", async () => {
  for (const value of ["-1", "5s", "3601"]) {
    const out = await runMain({ SHUTDOWN_DRAIN_S: value, KV_PATH: ":memory:" });
    assert.equal(out.code, 2);
    const text = out.stderr.trim();
    assert.equal(text.split("\n").length, 1, text);
    assert.ok(text.startsWith(`invalid SHUTDOWN_DRAIN_S="${value}"`), text);
  }
});
