import type { Logger } from "../lib/log.ts";
import { openFilesLimit } from "../lib/proc.ts";
import type { Handler } from "./handler.ts";

/** The HTTP listener of the long-lived process, kept listening through accept failures. */
export interface HttpListener {
  /** The address bound at start; a listener that comes back binds the same port. */
  addr: Deno.NetAddr;
  /** False from an accept failure until a new listener has taken connections again. */
  serving(): boolean;
  /** Stops accepting and finishes in-flight requests. */
  shutdown(): Promise<void>;
}

/** How fast a failed listener comes back. */
interface RelistenTiming {
  /** First wait before listening again; doubled after each failure up to `maxBackoffMs`. */
  minBackoffMs: number;
  maxBackoffMs: number;
  /** A new listener counts as serving once it answered a request or lasted this long. */
  settleMs: number;
}

const DEFAULT_TIMING: RelistenTiming = { minBackoffMs: 50, maxBackoffMs: 1000, settleMs: 1000 };

/**
 * Listens with `Deno.serve` and keeps listening. When accepting fails (descriptors exhausted:
 * "Too many open files"), Deno closes the listener and rejects its `finished`, while the
 * connections already open go on being served; left alone the rejection ends the process. Here
 * it is logged once, `serving()` turns false, and a new listener binds the same port after a
 * short backoff that doubles while accepting keeps failing. One line when it fails, one when it
 * serves again (with how long it was down and how many attempts failed).
 */
export function listenHttp(
  options: { port: number; hostname: string },
  handler: Handler,
  logger: Logger,
  timing: RelistenTiming = DEFAULT_TIMING,
): HttpListener {
  let current = Deno.serve({ ...options, onListen: () => {} }, handler);
  const addr = current.addr;
  let up = true;
  let closing = false;
  let down: { since: number; failures: number } | undefined;
  let backoff = timing.minBackoffMs;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let settle: ReturnType<typeof setTimeout> | undefined;

  function watch(server: Deno.HttpServer<Deno.NetAddr>): void {
    server.finished.catch((error: unknown) => {
      if (closing || server !== current) return;
      failed(error);
    });
  }

  function failed(error: unknown): void {
    up = false;
    clearTimeout(settle);
    if (down === undefined) {
      down = { since: Date.now(), failures: 1 };
      // Nothing here may need a descriptor: there may be none.
      logger.error("http listener failed", {
        port: addr.port,
        error: error instanceof Error ? error.message : String(error),
        action: "listening again with backoff",
      });
      logger.flush();
    } else down.failures++;
    retry = setTimeout(relisten, backoff);
    backoff = Math.min(backoff * 2, timing.maxBackoffMs);
  }

  function serving(): void {
    clearTimeout(settle);
    if (up || closing) return;
    up = true;
    backoff = timing.minBackoffMs;
    const fields = {
      port: addr.port,
      downMs: down === undefined ? 0 : Date.now() - down.since,
      failures: down?.failures ?? 0,
    };
    down = undefined;
    // Descriptors are free again: the limit (perhaps changed since start) can be read now.
    void openFilesLimit().then((maxOpenFiles) =>
      logger.always("http listener serving again", { ...fields, maxOpenFiles })
    );
  }

  function relisten(): void {
    if (closing) return;
    let server: Deno.HttpServer<Deno.NetAddr>;
    try {
      // The first request through a new listener proves accepting works again.
      server = Deno.serve(
        { port: addr.port, hostname: options.hostname, onListen: () => {} },
        (request, info) => {
          if (!up) serving();
          return handler(request, info);
        },
      );
    } catch (error) {
      // No descriptor for the socket itself yet, or the port is not free again yet.
      failed(error);
      return;
    }
    current = server;
    watch(server);
    settle = setTimeout(serving, timing.settleMs);
  }

  watch(current);
  return {
    addr,
    serving: () => up,
    async shutdown() {
      closing = true;
      clearTimeout(retry);
      clearTimeout(settle);
      // A listener that failed has closed already: its shutdown may reject.
      await current.shutdown().catch(() => {});
    },
  };
}
