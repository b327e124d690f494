import { cpuSeconds, peakTreeMemory } from "./proc.ts";
import { pinned } from "./tools.ts";

/** A server or peer started by the bench as its own process. */
export interface Service {
  name: string;
  pid: number;
  /** The `listening` line the process printed (holds its bound URLs, e.g. `http`, `grpc`). */
  listening: Record<string, unknown>;
  /**
   * Peak memory so far in MiB, each page counted once (proc.ts, peakTreeMemory): `total`, and
   * for a tree of processes (a supervised child) each one's own part and the file pages they
   * share. NaN when /proc is unavailable.
   */
  peakMemory(): Promise<{ total: number; each: number[]; shared: number }>;
  /** Lines written to stdout so far (the server's JSON log: one access-log line per request). */
  stdoutLines(): number;
  /** How often each of the spec's `markers` appeared on stdout so far. */
  markerCount(marker: string): number;
  /** The first few KiB of output, for error messages. */
  head(): string;
  /** CPU time (user + system, all threads) the process used so far, in seconds. */
  cpuSeconds(): Promise<number>;
  /** True until the process exits. */
  alive(): boolean;
  /** The first few KiB of stderr and whether the process exited, for error messages. */
  diagnosis(): string;
  /** Sends a signal (SIGTERM by default) and waits for the exit; resolves to the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
}

/** How to start one service. */
export interface ServiceSpec {
  name: string;
  command: string[];
  env?: Record<string, string>;
  cwd?: string;
  cpus?: string | undefined;
  timeoutMs?: number;
  /** Strings to count on stdout, e.g. a log message announcing a crashed helper process. */
  markers?: string[];
}

const HEAD_LIMIT = 16 * 1024;

/**
 * Starts a process and waits for the JSON line with `"msg":"listening"` on its stdout. Output is
 * read and discarded as it comes (only the first KiB are kept and lines counted), so a server
 * that logs every request pays for its log as it would behind a log collector reading a pipe.
 */
export async function startService(spec: ServiceSpec): Promise<Service> {
  const [cmd, ...args] = pinned(spec.cpus, spec.command);
  const child = new Deno.Command(cmd!, {
    args,
    env: spec.env,
    cwd: spec.cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let head = "";
  let errors = "";
  let lines = 0;
  const markers = new Map((spec.markers ?? []).map((m) => [m, 0]));
  let carry = "";
  let listening: Record<string, unknown> | undefined;
  const decoder = new TextDecoder();
  const markerDecoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>, isStdout: boolean) => {
    for await (const chunk of stream) {
      if (isStdout) {
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
        if (markers.size > 0) carry = countMarkers(carry + markerDecoder.decode(chunk), markers);
      }
      if (!isStdout && errors.length < HEAD_LIMIT) errors += decoder.decode(chunk);
      if (head.length < HEAD_LIMIT) {
        head += decoder.decode(chunk, { stream: true });
        if (!listening && isStdout) listening = findListening(head);
      }
    }
  };
  const pumps = Promise.all([pump(child.stdout, true), pump(child.stderr, false)]);
  let exited: Deno.CommandStatus | undefined;
  const status = child.status.then((s) => (exited = s));
  const deadline = Date.now() + (spec.timeoutMs ?? 60_000);
  while (!listening) {
    if (exited || Date.now() > deadline) {
      if (!exited) child.kill("SIGKILL");
      await status;
      await pumps;
      const why = exited
        ? `exited with code ${exited.code}${exited.signal ? `, ${exited.signal}` : ""}`
        : "timed out";
      throw new Error(`${spec.name} did not start (${why}):\n${head}${errors.slice(0, 2000)}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const found = listening;
  return {
    name: spec.name,
    pid: child.pid,
    listening: found,
    peakMemory: () => peakTreeMemory(child.pid),
    stdoutLines: () => lines,
    markerCount: (marker) => markers.get(marker) ?? 0,
    head: () => head,
    alive: () => exited === undefined,
    cpuSeconds: () => cpuSeconds(child.pid),
    diagnosis: () =>
      `${spec.name} ${exited ? `exited with code ${exited.code}` : "still running"}; ` +
      `stderr: ${errors.slice(0, 4000) || "(empty)"}`,
    stop: async (signal: Deno.Signal = "SIGTERM") => {
      if (!exited) {
        try {
          child.kill(signal);
        } catch { /* already gone */ }
      }
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* already gone */ }
      }, 15_000);
      const s = await status;
      clearTimeout(timer);
      await pumps;
      return s.code;
    },
  };
}

function findListening(text: string): Record<string, unknown> | undefined {
  for (const line of text.split("\n")) {
    if (!line.includes('"listening"')) continue;
    try {
      const value = JSON.parse(line);
      if (value?.msg === "listening") return value;
    } catch { /* a partial line: wait for the rest */ }
  }
  return undefined;
}

/** Counts markers in `text`; returns its tail, which may hold the start of a split marker. */
function countMarkers(text: string, markers: Map<string, number>): string {
  let longest = 0;
  for (const [marker, n] of markers) {
    markers.set(marker, n + text.split(marker).length - 1);
    longest = Math.max(longest, marker.length);
  }
  const tail = text.slice(-(longest - 1));
  // A marker wholly inside the tail was counted already; only a proper prefix may carry over.
  return [...markers.keys()].some((m) => tail.includes(m)) ? "" : tail;
}
