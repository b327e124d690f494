/** What a child process wrote to stderr, kept within a bound. */
export interface StderrRecord {
  append(text: string): void;
  /** Everything kept, colour codes removed. */
  text(): string;
  /**
   * Why the process died, as far as its stderr tells: the first lines of its last error report
   * (Deno's `error: Uncaught …` and the top of the stack, a Rust panic, an assertion or a
   * `free()` abort from native code), else the first lines it wrote. Empty when it wrote nothing.
   */
  crashReport(): string;
}

const KEEP_HEAD = 4096;
const KEEP_TAIL = 8192;
const REPORT_LINES = 12;
const REPORT_CHARS = 2000;
// Terminal colour and cursor codes (CSI sequences): NO_COLOR is set for the child, but native
// code and older runtimes may ignore it.
// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;
// Lines a fatal report starts with: Deno's uncaught error, a Rust panic, a C assertion or
// allocator abort, V8's fatal error.
const REPORT_START =
  /^(error: |thread '.*' panicked|.*Assertion .* failed|free\(\): |double free|munmap_chunk|#\s*Fatal error|Segmentation fault|fatal runtime error)/;

/**
 * Keeps the start and the end of a child's stderr (a child that writes a lot before it dies
 * still has its last report kept) and finds the report that tells why it died.
 */
export function recordStderr(): StderrRecord {
  let head = "";
  let tail = "";
  let dropped = false;
  return {
    append(text) {
      if (head.length < KEEP_HEAD) {
        const room = KEEP_HEAD - head.length;
        head += text.slice(0, room);
        text = text.slice(room);
      }
      if (text.length === 0) return;
      tail += text;
      if (tail.length > KEEP_TAIL) {
        dropped = true;
        tail = tail.slice(-KEEP_TAIL);
      }
    },
    text() {
      return (head + (dropped ? "\n…\n" : "") + tail).replace(ANSI, "");
    },
    crashReport() {
      const lines = this.text().split("\n").map((l) => l.trimEnd());
      let start = -1;
      for (let i = lines.length - 1; i >= 0; i--) {
        if (REPORT_START.test(lines[i]!)) {
          start = i;
          break;
        }
      }
      const from = start === -1 ? lines.findIndex((l) => l.trim() !== "") : start;
      if (from === -1) return "";
      const report = lines.slice(from).filter((l) => l.trim() !== "").slice(0, REPORT_LINES)
        .join("\n");
      return report.length > REPORT_CHARS ? `${report.slice(0, REPORT_CHARS)}…` : report;
    },
  };
}
