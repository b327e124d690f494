import { pinned } from "./tools.ts";

/** A server or peer started by the bench as its own process. */
export interface Service {
  name: string;
  pid: number;
  /** The `listening` line the process printed (holds its bound URLs, e.g. `http`, `grpc`). */
  listening: Record<string, unknown>;
  /** Peak resident set size so far in MiB (VmHWM), or NaN when /proc is unavailable. */
  peakRssMiB(): Promise<number>;
  /** Lines written to stdout so far (the server's JSON log: one access-log line per request). */
  stdoutLines(): number;
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
  let listening: Record<string, unknown> | undefined;
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>, isStdout: boolean) => {
    for await (const chunk of stream) {
      if (isStdout) {
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
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
      throw new Error(`${spec.name} did not start (${exited ? "exited" : "timed out"}):\n${head}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const found = listening;
  return {
    name: spec.name,
    pid: child.pid,
    listening: found,
    peakRssMiB: () => peakRssMiB(child.pid),
    stdoutLines: () => lines,
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

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ; 100 on Linux for every common architecture

/** User + system CPU seconds of a process (/proc/<pid>/stat), or NaN when unavailable. */
export async function cpuSeconds(pid: number | "self"): Promise<number> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

/** VmHWM (peak RSS) of a process in MiB. */
export async function peakRssMiB(pid: number): Promise<number> {
  try {
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const match = /^VmHWM:\s+(\d+) kB/m.exec(status);
    return match ? Number(match[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}
