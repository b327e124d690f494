import assert from "node:assert/strict";
import { spawnDeno } from "../support/process.ts";

const SCRIPT = new URL("../support/last_resort_script.ts", import.meta.url).pathname;

async function run(mode: string) {
  const child = spawnDeno(["run", "--allow-env", SCRIPT, mode], { NO_COLOR: "1" });
  const code = await child.stop("SIGCONT"); // a signal that does not end it: waits for its exit
  return { code, lines: child.lines(), output: child.output() };
}

Deno.test("the gRPC child's last-resort handler logs and counts what escapes, and lives on", async () => {
  const { code, lines, output } = await run("some");
  assert.equal(code, 0, output);
  assert.ok(lines.some((l) => l.msg === "alive"), "still running after four escaped errors");
  assert.ok(!output.includes("Uncaught"), "the runtime reported nothing itself");
  const logged = lines.filter((l) => l.msg === "grpc listener: uncaught error");
  // Three one by one (the window's allowance), the fourth counted when the window ends.
  assert.equal(logged.length, 3, output);
  assert.deepEqual(logged.map((l) => l.total), [1, 2, 3]);
  for (const line of logged) {
    assert.equal(line.level, "error");
    assert.ok(["uncaught exception", "unhandled rejection"].includes(String(line.kind)));
    assert.match(String(line.error), /^(Type)?Error: /);
  }
  const summary = lines.filter((l) =>
    l.msg === "grpc listener: uncaught errors not logged one by one"
  );
  assert.equal(summary.length, 1, output);
  assert.equal(summary[0]!.count, 1);
  assert.equal(summary[0]!.total, 4);
  const kinds = new Set(logged.map((l) => l.kind));
  assert.ok(kinds.has("uncaught exception"), output);
});

Deno.test("past its budget the last-resort handler gives the process up, once", async () => {
  const { code, lines, output } = await run("flood");
  assert.equal(code, 70, output);
  assert.equal(lines.filter((l) => l.msg === "unsafe").length, 1);
  const gaveUp = lines.filter((l) =>
    l.msg === "grpc listener: too many uncaught errors; restarting the process"
  );
  assert.equal(gaveUp.length, 1);
  assert.match(String(gaveUp[0]!.reason), /^21 uncaught errors within 200 ms$/);
  const logged = lines.filter((l) => l.msg === "grpc listener: uncaught error");
  assert.equal(logged.length, 3, "the log stays small");
  assert.match(String(logged[0]!.stack), /failInATimer/);
  assert.ok(!lines.some((l) => l.msg === "alive"));
});
