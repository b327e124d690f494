// POSIX PIPE_BUF on Linux: a write to a pipe of at most this many bytes is never interleaved
// with another process's writes to the same pipe.
const PIPE_BUF = 4096;
const NEWLINE = 0x0a;
const encoder = new TextEncoder();

/**
 * Writes whole log lines to stdout, in writes of at most PIPE_BUF bytes that each end at a line
 * end (a single longer line is written alone).
 *
 * Why: the server and its supervised gRPC child write to the same stdout. A larger write to a
 * pipe can be split when the pipe is full, and the other process's write then lands inside a
 * line of it; split at line ends, every line reaches the reader whole. (Regular files and
 * terminals never interleave one write with another.)
 */
export function writeLinesToStdout(text: string): void {
  writeLines(encoder.encode(text), (bytes) => Deno.stdout.writeSync(bytes));
}

/** The same, to any sink that may write only part of what it is given (for tests). */
export function writeLines(bytes: Uint8Array, write: (bytes: Uint8Array) => number): void {
  let start = 0;
  while (start < bytes.length) {
    let end = bytes.length;
    if (end - start > PIPE_BUF) {
      // The last line end within the limit, else the end of the one long line.
      const cut = bytes.lastIndexOf(NEWLINE, start + PIPE_BUF - 1);
      if (cut >= start) end = cut + 1;
      else {
        const next = bytes.indexOf(NEWLINE, start + PIPE_BUF);
        end = next === -1 ? bytes.length : next + 1;
      }
    }
    for (let at = start; at < end;) at += write(bytes.subarray(at, end));
    start = end;
  }
}
