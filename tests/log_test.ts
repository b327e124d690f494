import assert from "node:assert/strict";
import { type AccessLine, createLogger, type LogLevel } from "../lib/log.ts";

function captured(level: LogLevel) {
  let text = "";
  const logger = createLogger({ level, write: (t) => (text += t) });
  const lines = () => {
    logger.flush();
    return text.split("\n").filter(Boolean).map((l) => JSON.parse(l));
  };
  return { logger, lines };
}

Deno.test("an access-log line is the line info() would write for the same fields", () => {
  const samples: AccessLine[] = [
    { method: "GET", path: "/rest/books", status: 200, durationMs: 0.004, requestId: "a-1" },
    { method: "DELETE", path: "/addresses/7", status: 204, durationMs: 12, requestId: "b.2:3" },
    // Paths and ids reach the log as the client sent them, quotes and all: still valid JSON.
    { method: "GET", path: '/x"y\\z\u2028ü', status: 404, durationMs: 1.5, requestId: 'q"\n' },
  ];
  for (const sample of samples) {
    const fast = captured("info");
    fast.logger.request(sample);
    const generic = captured("info");
    generic.logger.info("request", { ...sample });
    const [a] = fast.lines();
    const [b] = generic.lines();
    assert.deepEqual({ ...a, time: undefined }, { ...b, time: undefined });
    assert.deepEqual(Object.keys(a), Object.keys(b));
    assert.match(a.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  }
});

Deno.test("access-log lines follow the level: none at warn", () => {
  const { logger, lines } = captured("warn");
  logger.request({ method: "GET", path: "/", status: 200, durationMs: 1, requestId: "r" });
  logger.warn("kept");
  assert.deepEqual(lines().map((l) => l.msg), ["kept"]);
});

Deno.test("a process that ends on its own writes its buffered lines, whatever the writer", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const script = `${dir}/last_line.ts`;
    await Deno.writeTextFile(
      script,
      `import { createLogger } from ${
        JSON.stringify(new URL("../lib/log.ts", import.meta.url).href)
      };
import { writeLinesToStdout } from ${
        JSON.stringify(new URL("../lib/stdout_lines.ts", import.meta.url).href)
      };
createLogger({ write: writeLinesToStdout }).info("last line");
`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-config", "--allow-read", script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const lines = new TextDecoder().decode(out.stdout).split("\n").filter(Boolean);
    assert.deepEqual(lines.map((l) => JSON.parse(l).msg), ["last line"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
