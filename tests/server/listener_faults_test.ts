import assert from "node:assert/strict";
import { waitForLine } from "../support/logs.ts";
import { spawnMainOnFreePorts, untilStatus } from "../support/process.ts";

/** util-linux's prlimit: lowers another process's limits, which needs no privilege. */
function hasPrlimit(): boolean {
  try {
    return new Deno.Command("prlimit", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

/** One HTTP/1.1 request on an open connection; resolves to the status. */
async function statusOn(conn: Deno.Conn, path: string): Promise<number> {
  await conn.write(new TextEncoder().encode(`GET ${path} HTTP/1.1\r\nhost: test\r\n\r\n`));
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(16384);
  let text = "";
  for (;;) {
    const n = await conn.read(buffer);
    if (n === null) throw new Error(`connection closed after ${JSON.stringify(text)}`);
    text += decoder.decode(buffer.subarray(0, n), { stream: true });
    const end = text.indexOf("\r\n\r\n");
    if (end < 0) continue;
    const length = Number(/content-length: *([0-9]+)/i.exec(text.slice(0, end))?.[1] ?? 0);
    if (new TextEncoder().encode(text.slice(end + 4)).length >= length) {
      return Number(text.slice(9, 12));
    }
  }
}

Deno.test({
  name:
    "descriptors exhausted by a connection flood: the listener comes back on the same port, readiness 503 meanwhile, one log line each way",
  ignore: Deno.build.os !== "linux" || !hasPrlimit(),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "books-fds-" });
    const server = spawnMainOnFreePorts({ GRPC_PORT: "off", KV_PATH: `${dir}/kv.sqlite3` });
    const { port, baseUrl: base } = server;
    const flood: Deno.Conn[] = [];
    let keep: Deno.Conn | undefined;
    try {
      const listening = await waitForLine(server.lines, "listening");
      assert.equal(typeof listening.maxOpenFiles, "number", "the file limit is logged at start");
      await untilStatus(`${base}/readyz`, 200, "readiness");

      // A limit a little above what the process holds now, as in a small container.
      // Deno reads /proc only with --allow-all: ls it.
      const fds = await new Deno.Command("ls", { args: [`/proc/${server.pid}/fd`] }).output();
      const open = new TextDecoder().decode(fds.stdout).trim().split("\n").length;
      const limit = open + 40;
      const lowered = await new Deno.Command("prlimit", {
        args: ["--pid", String(server.pid), `--nofile=${limit}:${limit}`],
      }).output();
      assert.ok(lowered.success, new TextDecoder().decode(lowered.stderr));

      // Opened before the flood: the connections a failed listener has open go on being served.
      keep = await Deno.connect({ hostname: "127.0.0.1", port });
      assert.equal(await statusOn(keep, "/readyz"), 200);

      for (let i = 0; i < limit + 60; i++) {
        try {
          flood.push(await Deno.connect({ hostname: "127.0.0.1", port }));
        } catch {
          // Refused: the listener is closed.
        }
      }
      await waitForLine(server.lines, "http listener failed");
      assert.equal(await statusOn(keep, "/readyz"), 503, "not ready while the listener is down");

      for (const conn of flood.splice(0)) conn.close();
      await untilStatus(`${base}/healthz`, 200, "the same process serving again");
      await untilStatus(`${base}/readyz`, 200, "readiness again");
      // Written once the limit is read again, after readiness turned.
      await waitForLine(server.lines, "http listener serving again");
      const lines = server.lines();
      const failed = lines.filter((l) => l.msg === "http listener failed");
      assert.equal(failed.length, 1, "logged once");
      assert.equal(failed[0]!.level, "error");
      assert.match(String(failed[0]!.error), /too many open files/i);
      const back = lines.filter((l) => l.msg === "http listener serving again");
      assert.equal(back.length, 1);
      assert.equal(back[0]!.maxOpenFiles, limit);
      assert.equal(lines.filter((l) => l.msg === "listening").length, 1, "never restarted");
      assert.doesNotMatch(server.output(), /Uncaught/);
    } finally {
      for (const conn of flood) conn.close();
      keep?.close();
      assert.equal(await server.stop(), 0);
      await Deno.remove(dir, { recursive: true });
    }
  },
});
