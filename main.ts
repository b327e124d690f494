import { type Config, ConfigError, loadConfig } from "./lib/config.ts";
import { createLogger, stdoutLogFormat } from "./lib/log.ts";
import { onSignals } from "./lib/signals.ts";
import { writeLinesToStdout } from "./lib/stdout_lines.ts";
import { type RunningServer, startServer } from "./server/run.ts";
import { servedEdge } from "./server/deno_serve.ts";

export { type RunningServer, startServer } from "./server/run.ts";

const served = servedEdge(() => Deno.env.toObject());

/**
 * `deno serve main.ts` (and `--parallel`, and Deno Deploy): one port with REST, GraphQL,
 * Connect and gRPC-Web. Storage opens on first use; native gRPC needs `deno task start`.
 */
export default { fetch: served.fetch } satisfies Deno.ServeDefaultExport;

/** `deno run main.ts` (and `deno task start`, start.ts): both listeners, the gRPC one supervised. */
async function runProcess(config: Config): Promise<void> {
  // The gRPC child writes to the same stdout (logToStdout): lines are written whole.
  const logger = createLogger({
    level: config.logLevel,
    format: stdoutLogFormat(config.logFormat),
    write: writeLinesToStdout,
  });
  // A file-size limit (`ulimit -f`) kills with SIGXFSZ by default; ignored, the write fails
  // with EFBIG instead, and that is a storage fault the client gets a 503 for.
  ignoreSignal("SIGXFSZ");
  let server: RunningServer | undefined;
  const stop = async (signal: Deno.Signal) => {
    logger.info("shutting down", { signal });
    // Still starting (waiting for a locked KV, say): nothing serves yet, nothing to drain.
    if (server === undefined) {
      logger.flush();
      Deno.exit(0);
    }
    // SIGTERM is an orchestrator's: drain. SIGINT (Ctrl-C) stops at once; a second signal
    // ends a drain.
    const drainMs = signal === "SIGTERM" ? config.shutdownDrainS * 1000 : 0;
    await server.shutdown({ drainMs });
    Deno.exit(0);
  };
  // Before start-up: readiness can answer 200 before `startServer` returns.
  onSignals(["SIGINT", "SIGTERM"], (signal) => void stop(signal));
  try {
    server = await startServer(config, { logger, logToStdout: true });
  } catch (error) {
    logger.flush();
    console.error(error instanceof ConfigError ? error.message : `start-up failed: ${error}`);
    Deno.exit(1);
  }
}

function ignoreSignal(signal: Deno.Signal): void {
  try {
    Deno.addSignalListener(signal, () => {});
  } catch { /* not on this platform */ }
}

/**
 * Calls `then(true)` when the runtime serves the default export (`deno serve`), else
 * `then(false)`. A module cannot ask which subcommand runs it (`import.meta.main` is true under
 * both; denoland/deno#29447), but `deno serve` hands the default export to `Deno.serve` in every
 * worker right after evaluating the module, before any timer fires.
 */
function whenServeModeKnown(then: (servedByRuntime: boolean) => void): void {
  const original = Deno.serve;
  let called = false;
  Deno.serve = ((...args: Parameters<typeof Deno.serve>) => {
    called = true;
    return original(...args);
  }) as typeof Deno.serve;
  setTimeout(() => {
    Deno.serve = original;
    then(called);
  }, 0);
}

/**
 * Starts what the way this module is run asks for: the default export's single port under
 * `deno serve` and on Deno Deploy, both listeners under `deno run`. Called when this module is
 * the main one, and by start.ts.
 */
export function main(): void {
  // Validated at once, so a bad variable stops start-up with its one line before Deno prints
  // anything about the default export.
  let config: Config;
  try {
    config = loadConfig(Deno.env.toObject());
  } catch (error) {
    console.error(error instanceof ConfigError ? error.message : error);
    Deno.exit(2);
  }
  whenServeModeKnown((servedByRuntime) => {
    if (servedByRuntime) served.start();
    // Deno Deploy runs the module and serves what it passes to Deno.serve: one port, no child.
    else if (config.deploymentId !== undefined) {
      served.start();
      Deno.serve({ port: config.port, hostname: config.host }, served.fetch);
    } else void runProcess(config);
  });
}

if (import.meta.main) main();
