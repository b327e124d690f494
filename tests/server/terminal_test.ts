/**
 * `deno task start` and `deno task dev` as a developer runs them: on a terminal (a pseudo-terminal
 * made by util-linux `script`), stopped with Ctrl-C typed into it. Deno prints no warning of its
 * own, the log is readable lines (the gRPC child's too), and one Ctrl-C is one "shutting down"
 * line, although it reaches the server two or three times (the terminal signals the whole
 * process group, `deno task` passes the signal on, `--watch` adds a SIGTERM of its own).
 */
import assert from "node:assert/strict";
import { spawnDeno, waitFor } from "../support/process.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
// `time LEVEL msg key=value…` (lib/log.ts).
const PRETTY = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO |WARN |ERROR) [a-z]/;

/** Runs `deno task <task>` on a pseudo-terminal until it listens, types Ctrl-C, and returns its lines. */
async function onTerminal(task: string, env: Record<string, string> = {}): Promise<string[]> {
  // A KV file, not `:memory:`: the gRPC child opens the same KV (else it would not run).
  const dir = await Deno.makeTempDir({ prefix: "books-terminal-" });
  // `exec`: `script` runs the command with $SHELL, and a shell left waiting (dash, CI's
  // /bin/sh) is killed by the Ctrl-C itself and exits 130 whatever `deno task` does.
  const process = spawnDeno(
    ["-qefc", `exec ${Deno.execPath()} task ${task}`, "/dev/null"],
    {
      PORT: "0",
      GRPC_PORT: "0",
      HOST: "127.0.0.1",
      KV_PATH: `${dir}/kv.sqlite3`,
      NO_COLOR: "1",
      ...env,
    },
    ROOT,
    "script",
    true,
  );
  try {
    await waitFor(
      `${task} to listen`,
      () => / listening http=|"msg":"listening"/.test(process.output()) || undefined,
    );
    await process.input("\x03");
    assert.equal(await process.exited, 0, process.output());
  } finally {
    await process.stop("SIGKILL");
    await Deno.remove(dir, { recursive: true });
  }
  // The terminal echoes Ctrl-C as `^C`, ahead of whatever is written next.
  return process.output().replaceAll("^C", "").split(/\r?\n/).filter((line) => line !== "");
}

/** The server's log lines: what is neither `deno task`'s nor the watcher's own. */
function logLines(lines: string[]): string[] {
  return lines.filter((line) => !/^(Task|Watcher) /.test(line));
}

for (const task of ["start", "dev"]) {
  Deno.test(`deno task ${task} on a terminal: no warning, readable lines, one line per Ctrl-C`, async () => {
    const lines = await onTerminal(task);
    const log = logLines(lines);
    assert.deepEqual(log.filter((line) => !PRETTY.test(line)), [], lines.join("\n"));
    assert.ok(
      log.some((line) => / INFO {2}grpc listening grpc=http:\/\/127\.0\.0\.1:\d+ /.test(line)),
    );
    assert.ok(log.some((line) => / INFO {2}listening http=http:\/\/127\.0\.0\.1:\d+ /.test(line)));
    assert.equal(log.filter((line) => line.includes(" shutting down ")).length, 1, log.join("\n"));
    assert.ok(log.some((line) => line.endsWith(" INFO  shutting down signal=SIGINT")));
    assert.match(log.at(-1)!, / INFO {2}stopped$/);
  });
}

Deno.test("LOG_FORMAT=json on a terminal: JSON lines", async () => {
  const log = logLines(await onTerminal("start", { LOG_FORMAT: "json" }));
  assert.ok(log.length > 0);
  for (const line of log) assert.equal(typeof JSON.parse(line).msg, "string", line);
});
