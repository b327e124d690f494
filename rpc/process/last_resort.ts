import type { Logger } from "../../lib/log.ts";

/** What the last-resort handler has seen. */
interface LastResort {
  /** Uncaught exceptions and unhandled rejections since it was installed. */
  count(): number;
  /** Removes the handlers. */
  uninstall(): void;
}

/** Limits of the last-resort handler (defaults suit the gRPC listener's process). */
interface LastResortOptions {
  /** Errors logged one by one per window, each with the top of its stack; more are counted. */
  loggedPerWindow?: number;
  /** More errors than this in one window: the process's state is not trusted any more. */
  budgetPerWindow?: number;
  windowMs?: number;
}

const STACK_LINES = 8;

/**
 * Catches what escapes every other handler in this process (an uncaught exception, an
 * unhandled rejection), logs it and counts it, instead of letting the runtime end the process.
 *
 * Why this is safe here: the gRPC listener's state is per connection (an HTTP/2 session and its
 * streams) or read-only (the catalogue, the gate's settings). An error that escapes from one
 * connection's event handler leaves at worst that connection half cleaned up, and the
 * listener's own limits end such a connection anyway (the idle and handshake timeouts, the
 * caller's deadline, the peer going away); dying would instead fail every other client's calls.
 * What that argument does not cover is a fault that repeats on every call: then state may pile
 * up and every call fails regardless. Past `budgetPerWindow` errors in one window `onUnsafe` is
 * called once (the listener then stops gracefully and its supervisor starts a fresh process).
 *
 * Log volume stays bounded: at most `loggedPerWindow` errors are written one by one per window,
 * then one line per window counts the rest.
 */
export function installLastResort(
  deps: { logger: Logger; onUnsafe: (reason: string) => void },
  options: LastResortOptions = {},
): LastResort {
  const { logger } = deps;
  const loggedPerWindow = options.loggedPerWindow ?? 10;
  const budget = options.budgetPerWindow ?? 50;
  const windowMs = options.windowMs ?? 60_000;
  let total = 0;
  let inWindow = 0;
  let unlogged = 0;
  let windowTimer: ReturnType<typeof setTimeout> | undefined;
  let gaveUp = false;

  function endWindow() {
    windowTimer = undefined;
    if (unlogged > 0) {
      logger.error("grpc listener: uncaught errors not logged one by one", {
        count: unlogged,
        windowMs,
        total,
      });
    }
    inWindow = 0;
    unlogged = 0;
  }

  function handle(kind: string, error: unknown) {
    total++;
    inWindow++;
    if (windowTimer === undefined) {
      windowTimer = setTimeout(endWindow, windowMs);
      Deno.unrefTimer(windowTimer);
    }
    if (inWindow <= loggedPerWindow) {
      logger.error("grpc listener: uncaught error", { kind, ...describe(error), total });
    } else unlogged++;
    if (inWindow > budget && !gaveUp) {
      gaveUp = true;
      const reason = `${inWindow} uncaught errors within ${windowMs} ms`;
      logger.error("grpc listener: too many uncaught errors; restarting the process", {
        reason,
        total,
      });
      deps.onUnsafe(reason);
    }
  }

  const onError = (event: ErrorEvent) => {
    event.preventDefault();
    handle("uncaught exception", event.error ?? event.message);
  };
  const onRejection = (event: PromiseRejectionEvent) => {
    event.preventDefault();
    handle("unhandled rejection", event.reason);
  };
  globalThis.addEventListener("error", onError);
  globalThis.addEventListener("unhandledrejection", onRejection);
  return {
    count: () => total,
    uninstall: () => {
      globalThis.removeEventListener("error", onError);
      globalThis.removeEventListener("unhandledrejection", onRejection);
      if (windowTimer !== undefined) clearTimeout(windowTimer);
      windowTimer = undefined;
    },
  };
}

/** The error's message, code and the top of its stack (never a request body: errors carry none). */
function describe(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { error: String(error) };
  const code = (error as { code?: unknown }).code;
  return {
    error: `${error.name}: ${error.message}`,
    ...(typeof code === "string" ? { code } : {}),
    stack: (error.stack ?? "").split("\n").slice(1, 1 + STACK_LINES).map((l) => l.trim()).join(
      "\n",
    ),
  };
}
