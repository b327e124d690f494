/** The log lines a test reads: captured from an in-process logger, or a process's output. */
import { createLogger, type Logger, type LogLevel } from "../../lib/log.ts";
import { waitFor } from "./process.ts";

export type LogLine = Record<string, unknown>;

/** A logger that keeps each line it writes, parsed, in `lines`. */
export function captureLogs(level: LogLevel = "debug"): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = createLogger({
    level,
    unbuffered: true,
    write: (text) => {
      for (const line of text.split("\n")) if (line) lines.push(JSON.parse(line));
    },
  });
  return { logger, lines };
}

/**
 * Waits for the first line with `msg` (or that `match` accepts) among `lines()`: a logger writes
 * on a later tick, and a child process's lines pass through pipes.
 */
export function waitForLine(
  lines: () => LogLine[],
  match: string | ((line: LogLine) => boolean),
  what = typeof match === "string" ? `the "${match}" line` : "the log line",
): Promise<LogLine> {
  const accepts = typeof match === "string" ? (l: LogLine) => l.msg === match : match;
  return waitFor(what, () => lines().find(accepts));
}
