import { pinned } from "./tools.ts";

/** One wrk run against one URL. */
export interface WrkRun {
  url: string;
  seconds: number;
  connections: number;
  cpus?: string | undefined;
  /** Status every response must have. */
  status: number;
  /** Body lengths a response may have (bytes). */
  lengths: readonly number[];
  method?: "GET" | "POST";
  /** File holding the request body (sent as `contentType`). */
  bodyFile?: string;
  /** Content-Type of the body (default application/json). */
  contentType?: string;
  /** File of request paths (one a line) cycled through instead of the URL's path. */
  pathsFile?: string;
  /** Where the `id` of every good response body is written, one a line. */
  idsFile?: string;
  /**
   * Requests sent in turn instead of the URL's (wrk_check.lua has the format): the method, path
   * and body of each; `contentType` and `headers` go with every one.
   */
  requestsFile?: string;
  /** Index of the first request of `requestsFile` to send. */
  start?: number;
  /** Send `requestsFile` again from its start once every request was sent (default true). */
  wrap?: boolean;
  /** Headers sent with each request of `requestsFile`. */
  headers?: Record<string, string>;
  /** A file of bytes every good response body must end with. */
  suffixFile?: string;
}

/** What wrk measured and what the check script found. */
export interface WrkResult {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses the Lua hook saw; equals `requests` when every response was checked. */
  checked: number;
  /** Wrong status, wrong length, socket errors and timeouts together. */
  failures: number;
  /** A description of the first failure, or "". */
  firstFailure: string;
  /** Ids written to `idsFile`. */
  ids: number;
  /** Requests of `requestsFile` taken (sent or about to be): where the next run may start. */
  generated: number;
}

const SCRIPT = new URL("./wrk_check.lua", import.meta.url).pathname;

/** Runs wrk with the checking script; one client thread per pinned core. */
export async function runWrk(run: WrkRun, threads = 1): Promise<WrkResult> {
  const command = pinned(run.cpus, [
    "wrk",
    "-t",
    String(Math.min(threads, run.connections)),
    "-c",
    String(run.connections),
    "-d",
    `${run.seconds}s`,
    "--timeout",
    "10s",
    "-s",
    SCRIPT,
    run.url,
  ]);
  const out = await new Deno.Command(command[0]!, {
    args: command.slice(1),
    env: {
      BENCH_STATUS: String(run.status),
      BENCH_LENGTHS: run.lengths.join(","),
      BENCH_METHOD: run.method ?? "GET",
      BENCH_BODY_FILE: run.bodyFile ?? "",
      BENCH_CONTENT_TYPE: run.contentType ?? "application/json",
      BENCH_PATHS_FILE: run.pathsFile ?? "",
      BENCH_IDS_FILE: run.idsFile ?? "",
      BENCH_REQUESTS_FILE: run.requestsFile ?? "",
      BENCH_START: String(run.start ?? 0),
      BENCH_WRAP: run.wrap === false ? "0" : "1",
      BENCH_HEADERS: Object.entries(run.headers ?? {}).map(([k, v]) => `${k}: ${v}`).join("\n"),
      BENCH_SUFFIX_FILE: run.suffixFile ?? "",
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  const line = text.split("\n").find((l) => l.startsWith("BENCH_RESULT "));
  if (out.code !== 0 || !line) {
    throw new Error(
      `wrk failed (exit ${out.code}):\n${text}${new TextDecoder().decode(out.stderr)}`,
    );
  }
  const r = JSON.parse(line.slice("BENCH_RESULT ".length));
  const socketErrors = r.connectErrors + r.readErrors + r.writeErrors + r.timeouts;
  const unchecked = Math.max(0, r.requests - r.checked);
  const failures = r.badStatus + r.badLength + socketErrors + unchecked + r.exhausted;
  let firstFailure = r.firstBad as string;
  if (!firstFailure && socketErrors > 0) {
    firstFailure = `socket errors: connect ${r.connectErrors}, read ${r.readErrors}, ` +
      `write ${r.writeErrors}, timeout ${r.timeouts}`;
  }
  if (!firstFailure && unchecked > 0) firstFailure = `${unchecked} responses not checked`;
  if (r.exhausted) {
    firstFailure = `every request of the requests file was sent (from ${run.start ?? 0} on): ` +
      `more are needed for this long a run; ${firstFailure}`;
  }
  const seconds = r.durationUs / 1e6;
  return {
    requests: r.requests,
    seconds,
    rps: r.requests / seconds,
    p50Ms: r.p50Us / 1000,
    p99Ms: r.p99Us / 1000,
    checked: r.checked,
    failures,
    firstFailure,
    ids: r.ids,
    generated: r.generated,
  };
}
