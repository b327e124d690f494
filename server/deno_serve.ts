import { type Config, ConfigError, loadConfig } from "../lib/config.ts";
import { userMessage } from "../lib/errors.ts";
import { createLogger, stdoutLogFormat } from "../lib/log.ts";
import { helpUrl } from "./render_error.ts";
import type { Handler } from "./handler.ts";
import { openEdge } from "./compose.ts";
import { kvLabel } from "../store/kv/label.ts";

/** The edge as a `fetch` that a host calls: `deno serve`, `deno serve --parallel`, Deno Deploy. */
interface ServedEdge {
  /** The default export's `fetch`: the first call opens storage, later calls go straight in. */
  fetch: Handler;
  /** Opens storage now instead of on the first request; a bad configuration ends the process. */
  start(): void;
}

/**
 * The single-port edge for hosts that own the listener. Nothing happens at import: storage is
 * opened on `start()` or on the first request, whichever comes first, so importing the module
 * costs nothing and needs no permission. Only the HTTP side runs here: no gRPC listener, no
 * child process (native gRPC needs `deno task start`), and no file is written unless `KV_PATH`
 * is a file (never on Deno Deploy, where KV is the platform's).
 */
export function servedEdge(env: () => Record<string, string | undefined>): ServedEdge {
  let opening: Promise<Handler> | undefined;
  let handler: Handler | undefined;

  function open(): Promise<Handler> {
    opening ??= (async () => {
      const config: Config = loadConfig(env());
      const logger = createLogger({
        level: config.logLevel,
        format: stdoutLogFormat(config.logFormat),
      });
      try {
        // The host listens before this module is asked for anything: the port serves, and
        // readiness only waits for storage (below).
        const edge = await openEdge(config, logger, {
          isListening: () => true,
          isShuttingDown: () => false,
        });
        logger.always("listening", {
          mode: config.deploymentId === undefined ? "serve" : "deploy",
          kv: kvLabel(config),
        });
        logger.flush();
        handler = edge.handler;
        return edge.handler;
      } catch (error) {
        logger.flush();
        throw error;
      }
    })();
    return opening;
  }

  function start(): void {
    open().catch((error) => {
      console.error(error instanceof ConfigError ? error.message : `start-up failed: ${error}`);
      // On a host that refuses to exit, the requests explain instead (503 below).
      try {
        Deno.exit(error instanceof ConfigError ? 2 : 1);
      } catch { /* not allowed here */ }
    });
  }

  // Until storage is open; afterwards `fetch` below calls the handler directly.
  async function first(request: Request, info: Deno.ServeHandlerInfo): Promise<Response> {
    try {
      return await (await open())(request, info);
    } catch {
      // Start-up failed and its cause was written once; the app that renders errors does not
      // exist, so the detailed error body is built here. Never a 500: the service is unavailable.
      return unavailable();
    }
  }

  return {
    fetch: (request, info) => handler !== undefined ? handler(request, info) : first(request, info),
    start,
  };
}

// The configuration may be what failed: the link is relative.
function unavailable(): Response {
  const code = "service-unavailable";
  const body = {
    errors: [{
      error: code,
      message: userMessage(code, "en"),
      detail: "The server could not start; the cause is in its log.",
      help: helpUrl("", code),
    }],
  };
  return new Response(JSON.stringify(body), {
    status: 503,
    headers: { "content-type": "application/json", "retry-after": "1", "content-language": "en" },
  });
}
