import assert from "node:assert/strict";
import { recordStderr } from "../../rpc/process/child_stderr.ts";

function report(...chunks: string[]): string {
  const record = recordStderr();
  for (const chunk of chunks) record.append(chunk);
  return record.crashReport();
}

Deno.test("a child's crash report is the first lines of its last error, colour codes removed", () => {
  const uncaught = "\x1b[0m\x1b[1m\x1b[31merror\x1b[0m: Uncaught Error: boom\n" +
    Array.from({ length: 20 }, (_, i) => `    at f${i} (file:///x.ts:${i}:1)`).join("\n") + "\n";
  const lines = report("Warning: earlier noise\n", uncaught).split("\n");
  assert.equal(lines[0], "error: Uncaught Error: boom");
  assert.equal(lines[1], "    at f0 (file:///x.ts:0:1)");
  assert.equal(lines.length, 12, "the top of the stack, not all of it");

  // Native aborts below JavaScript (denoland/deno#36788), and Rust panics.
  assert.equal(
    report(
      "deno: nghttp2_session.c:2402: find_stream_on_goaway_func: Assertion `stream->closed_next == NULL' failed.\n",
    ),
    "deno: nghttp2_session.c:2402: find_stream_on_goaway_func: Assertion `stream->closed_next == NULL' failed.",
  );
  assert.equal(report("free(): invalid pointer\n"), "free(): invalid pointer");
  assert.match(
    report("noise\n", "\nthread 'main' panicked at src/x.rs:1:2:\nsomething\nnote: …\n"),
    /^thread 'main' panicked at src\/x\.rs:1:2:\nsomething\n/,
  );
  // Nothing recognisable: its first lines. Nothing at all: empty.
  assert.equal(report("just\nsome words\n"), "just\nsome words");
  assert.equal(report(""), "");
});

Deno.test("a child that writes a lot before it dies still has its last report kept", () => {
  const record = recordStderr();
  for (let i = 0; i < 10_000; i++) record.append(`line ${i} of chatter\n`);
  record.append("error: Uncaught TypeError: late\n    at g (file:///y.ts:1:1)\n");
  assert.equal(
    record.crashReport(),
    "error: Uncaught TypeError: late\n    at g (file:///y.ts:1:1)",
  );
  assert.ok(record.text().length < 16_000, "bounded");
  assert.match(record.text(), /^line 0 of chatter\n/);
});
