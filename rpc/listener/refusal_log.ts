import type { Logger } from "../../lib/log.ts";

/** Why the listener refused or closed a connection. */
type RefusalReason = "connection-limit" | "client-limit" | "handshake-timeout";

/** Counts refused connections and writes them as summary lines. */
export interface RefusalLog {
  refused(reason: RefusalReason, client: string): void;
  /** Writes what is counted and not yet written, and stops the interval timer. */
  close(): void;
}

// Distinct client addresses tracked per interval; a flood from more addresses is still
// counted, only its addresses are not told apart.
const MAX_CLIENTS = 10_000;

/**
 * One `grpc connections refused` warning per interval, with counts by reason, how many client
 * addresses were refused and the one refused most, never one line per connection: a flood of
 * connections would otherwise become a flood of log lines (each refused connection costs the
 * client one TCP handshake and the log a hundred bytes). The first refusal after a quiet
 * interval is written at once, so the log shows when a flood starts.
 */
export function createRefusalLog(logger: Logger, intervalMs = 10_000): RefusalLog {
  let counts = new Map<RefusalReason, number>();
  let clients = new Map<string, number>();
  let unnamed = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  function write() {
    if (counts.size === 0) return;
    let topClient = "";
    let topCount = 0;
    for (const [client, n] of clients) {
      if (n > topCount) [topClient, topCount] = [client, n];
    }
    logger.warn("grpc connections refused", {
      refused: Object.fromEntries(counts),
      clients: clients.size + (unnamed > 0 ? 1 : 0),
      topClient,
      topClientRefused: topCount,
      intervalMs,
    });
    counts = new Map();
    clients = new Map();
    unnamed = 0;
  }

  function tick() {
    timer = undefined;
    if (counts.size === 0) return; // quiet: the next refusal is written at once again
    write();
    arm();
  }

  function arm() {
    timer = setTimeout(tick, intervalMs);
    Deno.unrefTimer(timer);
  }

  return {
    refused(reason, client) {
      counts.set(reason, (counts.get(reason) ?? 0) + 1);
      if (clients.has(client) || clients.size < MAX_CLIENTS) {
        clients.set(client, (clients.get(client) ?? 0) + 1);
      } else unnamed++;
      if (timer === undefined) {
        write();
        arm();
      }
    },
    close() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      write();
    },
  };
}
