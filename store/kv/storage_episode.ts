import type { Logger } from "../../lib/log.ts";

/**
 * A fault that starts, lasts and ends, logged as one error line when it starts, a count of the
 * operations it failed or refused while it lasts (at growing intervals, so a fault that lasts for days does
 * not fill the disk it may be about), and one line when it ends. Never a line per request.
 */
interface Episode {
  /** True between `start` and `end`. */
  active(): boolean;
  /** Starts the episode and writes its error line; nothing when it is active already. */
  start(msg: string, fields: Record<string, unknown>): void;
  /** One more operation failed or refused. */
  count(): void;
  /** Writes the count line when one is due; called by a timer. */
  tick(): void;
  /** Ends the episode with one line (the count and how long it lasted); nothing when inactive. */
  end(fields?: Record<string, unknown>): void;
}

/** Timing of the count lines: the first after `firstReportMs`, each later one twice as late. */
export interface EpisodeTiming {
  firstReportMs: number;
  maxReportMs: number;
  now?: () => number;
}

export const DEFAULT_EPISODE_TIMING: EpisodeTiming = {
  firstReportMs: 10_000,
  maxReportMs: 600_000,
};

export function createEpisode(
  logger: Logger,
  lines: { still: string; ended: string },
  timing: EpisodeTiming = DEFAULT_EPISODE_TIMING,
): Episode {
  const now = timing.now ?? Date.now;
  let since: number | undefined;
  let fields: Record<string, unknown> = {};
  let failures = 0;
  let nextReport = 0;
  let interval = timing.firstReportMs;

  return {
    active: () => since !== undefined,
    start(msg, startFields) {
      if (since !== undefined) return;
      since = now();
      fields = startFields;
      failures = 0;
      interval = timing.firstReportMs;
      nextReport = since + interval;
      logger.error(msg, startFields);
      // Out now: the process may be about to be killed by whoever reads this line.
      logger.flush();
    },
    count() {
      if (since !== undefined) failures++;
    },
    tick() {
      if (since === undefined || now() < nextReport) return;
      logger.warn(lines.still, { ...fields, failures, forS: Math.round((now() - since) / 1000) });
      interval = Math.min(interval * 2, timing.maxReportMs);
      nextReport = now() + interval;
    },
    end(endFields = {}) {
      if (since === undefined) return;
      logger.always(lines.ended, {
        ...fields,
        ...endFields,
        failures,
        durationMs: now() - since,
      });
      since = undefined;
    },
  };
}
