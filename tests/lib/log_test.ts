import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type AccessLine,
  createLogger,
  type LogLevel,
  millisText,
  msSince,
} from "../../lib/log.ts";
import { runMain, spawnMainOnFreePorts, waitFor } from "../support/process.ts";
import { closeClientsOf, rawSession } from "../support/rpc_clients.ts";
import { h2Request } from "../support/raw_http.ts";

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
    // Lone surrogates are escaped, a pair and a noncharacter are not.
    {
      method: "GET",
      path: "/\ud800\ud83d\ude00\uffff",
      status: 400,
      durationMs: 3,
      requestId: "\udfff",
    },
  ];
  for (const sample of samples) assertSameLine(sample);
});

Deno.test("an access-log line is info()'s text for any method, path, id and duration", () => {
  // Whatever a client spells (quotes, backslashes, controls, lone surrogates), the line is the
  // generic one, character for character; a duration is msSince's number as JSON writes it.
  const text = fc.string({ unit: "binary", maxLength: 40 });
  fc.assert(
    fc.property(
      text,
      text,
      text,
      fc.double({ min: 0, max: 1e9, noNaN: true }),
      (method, path, requestId, elapsed) => {
        const durationMs = Math.round(elapsed * 1000) / 1000;
        assertSameLine({ method, path, status: 200, durationMs, requestId });
      },
    ),
  );
});

Deno.test("a duration's text is String()'s for every microsecond count msSince can give", () => {
  assert.equal(typeof msSince(performance.now()), "number");
  for (const ms of [0, 0.001, 0.01, 0.1, 0.5, 1, 1.05, 2.004, 12.034, 999.999, 1e6 + 0.02]) {
    assert.equal(millisText(ms), String(ms));
  }
  fc.assert(
    fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (micros) => {
      const ms = micros / 1000;
      assert.equal(millisText(ms), String(ms));
    }),
  );
});

Deno.test("buffered access lines keep their text, their time and their place among other lines", () => {
  const sample = { method: "GET", path: "/a", status: 200, durationMs: 0.25, requestId: "r-1" };
  const { logger, lines } = captured("info");
  const before = Date.now();
  logger.info("first");
  logger.request(sample);
  logger.request({ ...sample, path: '/q"', requestId: "r-2" });
  logger.warn("between");
  logger.request({ ...sample, status: 404, requestId: "r-3" });
  const after = Date.now();
  const written = lines();
  assert.deepEqual(written.map((l) => l.requestId ?? l.msg), [
    "first",
    "r-1",
    "r-2",
    "between",
    "r-3",
  ]);
  assert.deepEqual(written[1], { ...written[1], ...sample, level: "info", msg: "request" });
  assert.equal(written[2].path, '/q"');
  for (const line of written) {
    const time = Date.parse(line.time);
    assert.ok(time >= before - 1 && time <= after + 1, `${line.time} is when it was logged`);
  }
});

/** The fast line and info()'s line for the same fields: the same text but for the time. */
function assertSameLine(sample: AccessLine): void {
  const fast = rawLine((logger) => logger.request(sample));
  const generic = rawLine((logger) => logger.info("request", { ...sample }));
  const time = /^\{"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"/;
  assert.match(fast, time);
  assert.equal(fast.replace(time, ""), generic.replace(time, ""));
  assert.deepEqual(Object.keys(JSON.parse(fast)), Object.keys(JSON.parse(generic)));
}

function rawLine(log: (logger: ReturnType<typeof createLogger>) => void): string {
  let text = "";
  const logger = createLogger({ level: "info", write: (t) => (text += t), unbuffered: true });
  log(logger);
  return text;
}

Deno.test("buffered lines: a steady stream is written in blocks; after the last line the rest arrives on its own", async () => {
  const writes: string[] = [];
  const logger = createLogger({ level: "info", write: (t) => writes.push(t) });
  try {
    logger.info("first");
    logger.info("second");
    assert.equal(writes.length, 0, "lines wait to be written together");
    // The next line after the oldest has waited its time writes the block, without a timer.
    await new Promise((resolve) => setTimeout(resolve, 30));
    logger.info("third");
    assert.equal(writes.length, 1);
    assert.deepEqual(writes[0]!.split("\n").filter(Boolean).map((l) => JSON.parse(l).msg), [
      "first",
      "second",
      "third",
    ]);
    // Nothing follows: the tail is written by itself, well within a second.
    logger.info("last");
    await waitFor("the last line", () => writes.length === 2 || undefined, 1_000);
    assert.equal(JSON.parse(writes[1]!).msg, "last");
  } finally {
    // Stops the tail's timer: the test's sanitizer finds none left.
    logger.flush();
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
        JSON.stringify(new URL("../../lib/log.ts", import.meta.url).href)
      };
import { writeLinesToStdout } from ${
        JSON.stringify(new URL("../../lib/stdout_lines.ts", import.meta.url).href)
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

Deno.test("LOG_FORMAT=pretty: one readable line per event; a value that could break it is quoted", () => {
  let text = "";
  const logger = createLogger({ format: "pretty", write: (t) => (text += t), unbuffered: true });
  assert.equal(logger.format, "pretty");
  logger.info("listening", { http: "http://127.0.0.1:8000", kv: ":memory:", port: 8, on: true });
  logger.warn("odd values", {
    spaced: "a b",
    quote: 'say "hi"',
    fake: "x=1",
    newline: "one\ntwo",
    escape: "\u001b[31mred",
    c1: "\u009b31m",
    bidi: "\u202eevil",
    empty: "",
    nothing: null,
    skipped: undefined,
    list: [1, "two"],
  });
  logger.request({ method: "GET", path: "/x y", status: 404, durationMs: 0.5, requestId: "r-1" });
  logger.debug("below the level");
  const lines = text.split("\n").filter(Boolean).map((l) => l.slice(24));
  assert.deepEqual(lines, [
    " INFO  listening http=http://127.0.0.1:8000 kv=:memory: port=8 on=true",
    ' WARN  odd values spaced="a b" quote="say \\"hi\\"" fake="x=1" newline="one\\ntwo" ' +
    'escape="\\u001b[31mred" c1="\\u009b31m" bidi="\\u202eevil" empty="" nothing=null ' +
    'list=[1,"two"]',
    ' INFO  request method=GET path="/x y" status=404 durationMs=0.5 requestId=r-1',
  ]);
  assert.match(text, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /);
  assert.equal(createLogger({ write: () => {} }).format, "json");
});

Deno.test("LOG_FORMAT=pretty: the server and its gRPC child write readable lines, not on a terminal too", async () => {
  // A KV file, not `:memory:`: the gRPC child opens the same KV (else it would not run).
  const dir = await Deno.makeTempDir({ prefix: "books-log-" });
  const server = spawnMainOnFreePorts({ LOG_FORMAT: "pretty", KV_PATH: `${dir}/kv.sqlite3` });
  try {
    await waitFor(
      "the server to listen",
      () => / listening http=/.test(server.output()) || undefined,
    );
    await (await fetch(`${server.baseUrl}/rest/books`)).body?.cancel();
    const grpcUrl = `http://127.0.0.1:${server.grpcPort}`;
    await h2Request(rawSession(grpcUrl), {
      method: "POST",
      target: "/books.v1.BooksService/books",
      headers: { "content-type": "application/grpc", te: "trailers" },
      body: new Uint8Array(5),
    });
    await closeClientsOf(grpcUrl);
    assert.equal(await server.stop(), 0);
    const lines = server.output().split("\n").filter((line) =>
      line !== "" && !line.startsWith("warning: Detected export default")
    );
    for (const line of lines) {
      assert.match(line, /^\d{4}-\d\d-\d\dT\S+Z (DEBUG|INFO |WARN |ERROR) [a-z]/, line);
    }
    const has = (pattern: RegExp) => assert.ok(lines.some((l) => pattern.test(l)), String(pattern));
    has(/ INFO {2}grpc listening grpc=http:\/\/127\.0\.0\.1:\d+ pid=\d+$/);
    has(
      / INFO {2}request method=GET path=\/rest\/books status=200 durationMs=[\d.]+ requestId=\S+$/,
    );
    has(
      / INFO {2}rpc procedure=books\.v1\.BooksService\/books code=ok durationMs=[\d.]+ requestId=\S+$/,
    );
    has(/ INFO {2}shutting down signal=SIGTERM$/);
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an invalid LOG_FORMAT stops start-up with one line naming it", async () => {
  const { code, stdout, stderr } = await runMain({
    PORT: "0",
    GRPC_PORT: "off",
    LOG_FORMAT: "yaml",
  });
  assert.equal(code, 2);
  assert.equal(stderr + stdout, 'invalid LOG_FORMAT="yaml": must be json or pretty\n');
});
