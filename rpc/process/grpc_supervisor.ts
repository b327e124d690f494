import { dirname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { ConfigError } from "../../lib/config.ts";
import type { Logger } from "../../lib/log.ts";
import { isKvFile } from "../../store/kv/open.ts";
import { recordStderr, type StderrRecord } from "./child_stderr.ts";
import type { Book } from "../../lib/schemas.ts";
import { CHILD_CONFIG_ENV, type GrpcChildConfig, READY_MARKER } from "./grpc_child.ts";

/** The gRPC listener running in its own, supervised process. */
interface SupervisedGrpc {
  /** Base URL; stays the same across restarts. */
  url: string;
  /** True while a child listens; false from its death until its successor listens. */
  serving(): boolean;
  /** Graceful stop of the child (GOAWAY, in-flight calls finish); no restart afterwards. */
  shutdown(): Promise<void>;
}

const CHILD = new URL("./grpc_child.ts", import.meta.url).pathname;
const DENO_JSON = new URL("../../deno.json", import.meta.url).pathname;
const STOP_TIMEOUT_MS = 15_000;
// The message of the child's line announcing its listener, in either log format.
const LISTENING = "grpc listening";
const MAX_RESTART_DELAY_MS = 5_000;
const HEALTHY_AFTER_MS = 30_000;
// The child's V8 heap. With V8's defaults its RSS grows to several times its idle size under
// multiplexed load: a large young generation, and per-call objects promoted while their calls are
// in flight piling up in the old one. 4 MiB semi-spaces are the smallest in which the objects of
// the calls in flight die young (smaller ones promote them and cost CPU; larger ones cost memory
// and gained nothing in the bench). Letting the old generation double before the next major GC
// makes major GCs rare. Without allocation-site pretenuring, objects of calls in flight are not
// allocated straight into the old generation once V8 has seen such objects survive. The figures
// are in docs/grpc.md ("A bounded V8 heap").
const CHILD_V8_FLAGS = [
  "--max-semi-space-size=4",
  "--heap-growing-percent=100",
  "--no-allocation-site-pretenuring",
];
const V8_FLAGS = "--v8-flags=";

interface Child {
  process: Deno.ChildProcess;
  ready: Promise<string>;
  exited: Promise<Deno.CommandStatus>;
  /** Whether it wrote its `grpc listening` line. */
  listened(): boolean;
  stderr: StderrRecord;
}

/** How the supervisor starts its children. */
interface SupervisorOptions {
  /** The child's entry module (default rpc/process/grpc_child.ts; tests use one that fails on purpose). */
  entry?: string;
  /**
   * The logger writes to this process's stdout. The child then writes its log lines there
   * itself (its stdout is this process's) instead of passing each through this process, which
   * would otherwise read, copy and write every `rpc` line on the same CPU as the listener.
   */
  logToStdout?: boolean;
  /** Extra `deno run` flags of the child (`GRPC_CHILD_DENO_FLAGS`: profiling, tracing). */
  denoFlags?: string[];
  /**
   * The catalogue this process serves, handed to the child on its stdin as the seed of the KV
   * both open; without it the child reads and checks the seed file itself.
   */
  books?: readonly Book[];
}

function spawnChild(config: GrpcChildConfig, logger: Logger, options: SupervisorOptions): Child {
  const entry = options.entry ?? CHILD;
  const relay = !options.logToStdout;
  const books = options.books;
  // The child opens the same KV: a file's directory holds its journal and lock files too.
  const isFile = isKvFile(config.kvPath);
  const extra = options.denoFlags ?? [];
  // Deno keeps only the last --v8-flags: the extra V8 flags go after the child's own.
  const v8 = [
    ...CHILD_V8_FLAGS,
    ...extra.flatMap((f) => f.startsWith(V8_FLAGS) ? [f.slice(V8_FLAGS.length)] : []),
  ];
  const process = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      `${V8_FLAGS}${v8.join(",")}`,
      ...extra.filter((f) => !f.startsWith(V8_FLAGS)),
      "--config",
      DENO_JSON,
      "--allow-net",
      "--allow-env",
      "--allow-read",
      ...(isFile ? [`--allow-write=${dirname(config.kvPath)}`] : []),
      entry,
    ],
    // NO_COLOR: the child's stderr is read as text (its crash report goes into a log line).
    env: {
      [CHILD_CONFIG_ENV]: JSON.stringify({ ...config, catalogueOnStdin: books !== undefined }),
      NO_COLOR: "1",
    },
    stdin: "piped",
    stdout: relay ? "piped" : "inherit",
    stderr: "piped",
  }).spawn();

  if (books !== undefined) {
    // One line; the pipe then stays open, and its end tells the child this process is gone.
    const writer = process.stdin.getWriter();
    writer.write(new TextEncoder().encode(`${JSON.stringify(books)}\n`))
      .catch(() => {}) // a child that died at once: its death is reported below
      .finally(() => writer.releaseLock());
  }
  const stderr = recordStderr();
  let announced = false;
  let resolveReady!: (url: string) => void;
  const ready = new Promise<string>((resolve) => (resolveReady = resolve));
  // The listener's URL, from the ready line on stderr; and, when this process passes the child's
  // log on, whether the child's `grpc listening` line has been (a silent child writes none): no
  // reader of the log sees the server ready before the line that announces the listener.
  let url: string | undefined;
  let relayed = !relay || config.logLevel === "silent";
  const announce = () => {
    if (announced || url === undefined || !relayed) return;
    announced = true;
    resolveReady(url);
  };
  const pumpStdout = relay && (async () => {
    let pending = "";
    for await (const text of process.stdout.pipeThrough(new TextDecoderStream())) {
      pending += text;
      const end = pending.lastIndexOf("\n");
      if (end === -1) continue;
      // The complete lines are passed on as one block: under load a chunk holds hundreds of
      // `rpc` lines, and this process shares the CPU with the listener.
      const block = pending.slice(0, end + 1);
      pending = pending.slice(end + 1);
      logger.line(block);
      if (!relayed && block.includes(LISTENING)) {
        relayed = true;
        // Written before the listener counts as serving.
        logger.flush();
        announce();
      }
    }
  })();
  // The child's ready line, with the listener's URL, is taken out of its stderr (with stdout
  // inherited, the child wrote its `grpc listening` line to the shared stdout before it).
  const pumpStderr = (async () => {
    let head = "";
    let marked = false;
    for await (const text of process.stderr.pipeThrough(new TextDecoderStream())) {
      if (marked) {
        stderr.append(text);
        continue;
      }
      head += text;
      for (let end = head.indexOf("\n"); end !== -1 && !marked; end = head.indexOf("\n")) {
        const line = head.slice(0, end + 1);
        head = head.slice(end + 1);
        if (!line.startsWith(READY_MARKER)) {
          stderr.append(line);
          continue;
        }
        marked = true;
        url = JSON.parse(line.slice(READY_MARKER.length)).grpc;
        announce();
      }
      if (marked && head) {
        stderr.append(head);
        head = "";
      }
    }
    if (!marked && head) stderr.append(head);
  })();
  const exited = (async () => {
    const status = await process.status;
    await Promise.allSettled([pumpStdout, pumpStderr]);
    return status;
  })();
  const failed = exited.then((status): never => {
    if (status.code === 2) throw new ConfigError(stderr.text().trim().split("\n").pop() ?? "");
    throw new Error(
      `the gRPC listener exited (code ${status.code}) before listening: ${stderr.crashReport()}`,
    );
  });
  return {
    process,
    ready: Promise.race([ready, failed]),
    exited,
    listened: () => announced,
    stderr,
  };
}

async function stopChild(child: Child): Promise<void> {
  try {
    child.process.kill("SIGTERM");
  } catch { /* already gone */ }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((
    r,
  ) => (timer = setTimeout(() => r("timeout"), STOP_TIMEOUT_MS)));
  if (await Promise.race([child.exited, timeout]) === "timeout") {
    try {
      child.process.kill("SIGKILL");
    } catch { /* already gone */ }
    await child.exited;
  }
  clearTimeout(timer);
  await child.process.stdin.close().catch(() => {});
}

/**
 * Runs the gRPC listener in a child process and restarts it when it dies.
 *
 * Deno 2.9.6's node:http2 server can abort the whole process inside nghttp2 when clients close
 * connections (denoland/deno#36788); in-process, that would take the REST and GraphQL port
 * down with it. In its own process a crash costs only the gRPC connections of that moment: the
 * child is restarted on the same port, and the HTTP port never notices.
 */
export async function startSupervisedGrpc(
  config: GrpcChildConfig,
  logger: Logger,
  options: SupervisorOptions = {},
): Promise<SupervisedGrpc> {
  let current = spawnChild(config, logger, options);
  let url: string;
  try {
    url = await current.ready;
  } catch (error) {
    await stopChild(current);
    throw error;
  }
  const fixed = { ...config, port: Number(new URL(url).port) };
  let stopping = false;
  // Readiness of the whole process reads this: a dead or restarting child is not serving.
  let serving = true;

  async function supervise(): Promise<void> {
    let failures = 0;
    let restarts = 0;
    while (!stopping) {
      const started = Date.now();
      const status = await current.exited;
      serving = false;
      if (stopping) return logStderr(current);
      if (Date.now() - started > HEALTHY_AFTER_MS) failures = 0;
      const delay = Math.min(MAX_RESTART_DELAY_MS, 100 * 2 ** failures++);
      // One line per death, with what the child's stderr says about it.
      logger.error("grpc listener died; restarting", {
        code: status.code,
        signal: status.signal,
        restarts: ++restarts,
        restartInMs: delay,
        ...(current.listened() ? {} : { listened: false }),
        stderr: current.stderr.crashReport(),
      });
      await sleep(delay);
      if (stopping) return;
      current = spawnChild(fixed, logger, options);
      try {
        await current.ready;
        serving = !stopping;
        logger.info("grpc listener restarted", { grpc: url, restarts });
      } catch {
        // Its death is the next turn's line.
      }
    }
  }

  // A child stopped on purpose has nothing to report, unless it wrote to stderr.
  function logStderr(child: Child) {
    const text = child.stderr.text().trim();
    if (text) logger.warn("grpc listener stderr", { text: child.stderr.crashReport() });
  }
  const supervising = supervise();

  return {
    url,
    serving: () => serving,
    shutdown: async () => {
      stopping = true;
      serving = false;
      await stopChild(current);
      await supervising;
    },
  };
}
