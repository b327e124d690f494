/** Log levels in increasing severity. */
export type LogLevel = "debug" | "info" | "warn" | "error" | "silent";

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

/** How lines are written: one JSON object each, or readable text (`time LEVEL msg key=value…`). */
export type LogFormat = "json" | "pretty";

/**
 * The format of a logger writing to stdout: `configured` (`LOG_FORMAT`), else readable lines on a
 * terminal and JSON everywhere else (pipes, files, log collectors).
 */
export function stdoutLogFormat(configured: LogFormat | undefined): LogFormat {
  return configured ?? (Deno.stdout.isTerminal() ? "pretty" : "json");
}

/** Structured logger, one line per event. Fields must never carry secrets or request bodies. */
export interface Logger {
  /** How its lines are written (a child process writing to the same stdout follows it). */
  readonly format: LogFormat;
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** Logs at `info` whatever the level, unless `silent`: start-up and shutdown lines. */
  always(msg: string, fields?: Record<string, unknown>): void;
  /**
   * The access-log line of one request (`"msg":"request"`, at `info`): the same line as
   * `info("request", line)`, formatted without a generic JSON pass, as it is written for every
   * request. `line` is kept as it is until the line is written: it must not change after.
   */
  request(line: AccessLine): void;
  /** Passes on a line another process already formatted (the gRPC child's log). */
  line(text: string): void;
  /** Writes anything still buffered. */
  flush(): void;
}

/** Milliseconds since `started` (a `performance.now()`), rounded to the microsecond for logs. */
export function msSince(started: number): number {
  return Math.round((performance.now() - started) * 1000) / 1000;
}

/** What the access log records of a request. */
export interface AccessLine {
  method: string;
  path: string;
  status: number;
  durationMs: number;
  requestId: string;
  /** The OpenTelemetry trace id of the request, when tracing is on (lib/tracing.ts). */
  traceId?: string | undefined;
}

// While lines keep coming, each waits at most FLUSH_MS (checked as the next is pushed), or until
// FLUSH_CHARS are buffered, before one write. When they stop, the tail's timer writes the rest
// within TAIL_MS.
const FLUSH_MS = 20;
const FLUSH_CHARS = 32 * 1024;
const TAIL_MS = 200;

/**
 * Creates a logger writing one line per event: a JSON object (the default), or with `format:
 * "pretty"` the same time, level, message and fields as readable text. Lines are buffered and
 * written together: under load the access log costs a write per block of lines, not per request
 * (or per turn of the event loop). Nothing is lost on a clean stop: `flush()` is called before
 * the process exits, and the `unload` event flushes what is left.
 *
 * Why no timer per block: a timeout armed for every block, dozens a second under load, cost the
 * requests more than the log itself, where a timer ticking a few times a second costs nothing
 * measurable (docs/bench.md, "The access log's timer and the read wrappers"). So the age of the
 * oldest line is checked when the next one is pushed, and one slow timer runs only while lines
 * wait.
 */
export function createLogger(
  options: {
    level?: LogLevel;
    format?: LogFormat;
    write?: (text: string) => void;
    /** Writes each line at once, unbuffered: for a sink in memory, where a write costs nothing. */
    unbuffered?: boolean;
  } = {},
): Logger {
  const min = RANK[options.level ?? "info"];
  const format = options.format ?? "json";
  const encoder = new TextEncoder();
  const write = options.write ?? ((text: string) => writeAll(encoder.encode(text)));
  let buffer: string[] = [];
  let buffered = 0;
  // Access-log lines waiting as their fields, with when each was logged (Date.now()): formatted
  // together as the block is written, or before any other line is pushed (which keeps the
  // order). One at a time, between requests, formatting a line cost several times as much.
  let accesses: AccessLine[] = [];
  let accessTimes: number[] = [];
  // When the oldest buffered line was pushed (Date.now()).
  let oldest = 0;
  let tail: ReturnType<typeof setInterval> | undefined;
  // One ISO timestamp per millisecond: under load many lines share it, and formatting a Date
  // is a measurable part of an access-log line.
  let lastMs = -1;
  let lastIso = "";

  function formatAccesses() {
    if (accesses.length === 0) return;
    for (let i = 0; i < accesses.length; i++) {
      buffer.push(accessText(accesses[i]!, isoAt(accessTimes[i]!)));
    }
    accesses = [];
    accessTimes = [];
  }

  function writeBuffered() {
    formatAccesses();
    if (buffer.length === 0) return;
    const text = buffer.join("");
    buffer = [];
    buffered = 0;
    write(text);
  }

  /** Writes what waits and stops the tail's timer (a test's logger leaves none running). */
  function flush() {
    if (tail !== undefined) {
      clearInterval(tail);
      tail = undefined;
    }
    writeBuffered();
  }
  // Whatever the sink (the server and the gRPC child pass a writer to stdout), buffered lines
  // are written when the process ends.
  if (!options.unbuffered) globalThis.addEventListener("unload", flush);

  // The tail's timer: it stops once it finds nothing waiting, and the next line starts it again.
  function onTail() {
    if (buffer.length === 0 && accesses.length === 0) flush();
    else writeBuffered();
  }

  function push(text: string) {
    if (options.unbuffered) return write(text);
    formatAccesses();
    const now = Date.now();
    if (buffer.length === 0) oldest = now;
    buffer.push(text);
    added(text.length, now);
  }

  /** After a line of about `size` characters was buffered at `now`: a write, or the tail. */
  function added(size: number, now: number) {
    buffered += size;
    if (buffered >= FLUSH_CHARS || now - oldest >= FLUSH_MS) writeBuffered();
    else if (tail === undefined) {
      const timer = setInterval(onTail, TAIL_MS);
      // A waiting write does not keep the process alive; `unload` writes it.
      Deno.unrefTimer(timer);
      tail = timer;
    }
  }

  function timestamp(): string {
    return isoAt(Date.now());
  }

  function isoAt(now: number): string {
    if (now !== lastMs) {
      lastMs = now;
      lastIso = new Date(now).toISOString();
    }
    return lastIso;
  }

  function emit(level: LogLevel, msg: string, fields?: Record<string, unknown>, force = false) {
    if (RANK[level] < min && !(force && min < RANK.silent)) return;
    if (format === "pretty") return push(prettyLine(timestamp(), level, msg, fields));
    // Same line as JSON.stringify({time, level, msg, ...fields}), without copying `fields` into
    // a new object: its own JSON is spliced in after `msg`.
    const rest = fields === undefined ? "{}" : JSON.stringify(fields);
    const head = `{"time":"${timestamp()}","level":"${level}","msg":${JSON.stringify(msg)}`;
    push(rest.length > 2 ? `${head},${rest.slice(1)}\n` : `${head}}\n`);
  }

  function request(line: AccessLine) {
    if (RANK.info < min) return;
    if (format === "pretty") {
      return push(prettyLine(timestamp(), "info", "request", line as unknown as Fields));
    }
    if (options.unbuffered) return write(accessText(line, timestamp()));
    const now = Date.now();
    if (buffer.length === 0 && accesses.length === 0) oldest = now;
    accesses.push(line);
    accessTimes.push(now);
    // About its length: the line's fixed parts and the client's strings.
    added(line.path.length + line.requestId.length + 150, now);
  }

  return {
    format,
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    always: (m, f) => emit("info", m, f, true),
    request,
    line: (text) => push(text.endsWith("\n") ? text : `${text}\n`),
    flush,
  };
}

type Fields = Record<string, unknown>;

/**
 * An access-log line: strings quoted in place when nothing needs an escape (what a method, a
 * canonical path and a request id hold), else each by JSON.stringify; `status` is a finite
 * number, a trace id 32 hex digits.
 */
function accessText(line: AccessLine, time: string): string {
  const { method, path, requestId } = line;
  const trace = line.traceId === undefined ? "" : `,"traceId":"${line.traceId}"`;
  const head = `{"time":"${time}","level":"info","msg":"request","method":`;
  const status = `,"status":${line.status},"durationMs":${millisText(line.durationMs)}`;
  return PLAIN.test(method) && PLAIN.test(path) && PLAIN.test(requestId)
    ? `${head}"${method}","path":"${path}"${status},"requestId":"${requestId}"${trace}}\n`
    : `${head}${JSON.stringify(method)},"path":${JSON.stringify(path)}${status},"requestId":${
      JSON.stringify(requestId)
    }${trace}}\n`;
}

// What JSON.stringify writes as it is: no control, `"`, `\` or surrogate (a lone one is escaped).
const PLAIN = /^[ !#-\[\]-\ud7ff\ue000-\uffff]*$/;

/**
 * The JSON text of a duration in milliseconds rounded to the microsecond (`msSince`), as
 * `String(ms)` writes it (`2`, `0.5`, `12.034`), built from integers, whose text V8 keeps cached:
 * printing the fraction itself ran the shortest-digits algorithm for every line.
 */
export function millisText(ms: number): string {
  const micros = Math.round(ms * 1000);
  // Up to 10^9 ms (11.6 days) doubles are far denser than a microsecond, so String() prints the
  // same three decimals; beyond (or for what msSince does not give), String() itself.
  if (!(micros >= 0 && micros <= 1e12) || micros / 1000 !== ms) return String(ms);
  const whole = Math.floor(micros / 1000);
  const fraction = micros - whole * 1000;
  if (fraction === 0) return `${whole}`;
  if (fraction % 100 === 0) return `${whole}.${fraction / 100}`;
  if (fraction % 10 === 0) return `${whole}.${fraction < 100 ? "0" : ""}${fraction / 10}`;
  return `${whole}.${fraction < 10 ? "00" : fraction < 100 ? "0" : ""}${fraction}`;
}

const LABEL: Record<LogLevel, string> = {
  debug: "DEBUG",
  info: "INFO ",
  warn: "WARN ",
  error: "ERROR",
  silent: "",
};

/** `time LEVEL msg key=value…`: one line whatever the values hold. */
function prettyLine(time: string, level: LogLevel, msg: string, fields?: Fields): string {
  let line = `${time} ${LABEL[level]} ${msg}`;
  for (const name in fields) {
    const value = fields[name];
    if (value !== undefined) line += ` ${name}=${prettyValue(value)}`;
  }
  return `${line}\n`;
}

// Printable ASCII but space, `"`, `=` and `\`: shown as is. Anything else is JSON-quoted, so a
// value cannot break the line, fake a field or send a terminal control sequence.
const BARE = /^[!#-<>-\[\]-~]+$/;
const UNPRINTABLE = /[\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function prettyValue(value: unknown): string {
  if (typeof value === "string" && BARE.test(value)) return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  const json = JSON.stringify(value) ?? String(value);
  return json.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function writeAll(bytes: Uint8Array) {
  let offset = 0;
  while (offset < bytes.length) offset += Deno.stdout.writeSync(bytes.subarray(offset));
}
