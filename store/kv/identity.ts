import type { AppError } from "../../lib/errors.ts";
import type { Logger } from "../../lib/log.ts";
import { createEpisode, DEFAULT_EPISODE_TIMING, type EpisodeTiming } from "./storage_episode.ts";
import { storageUnavailable } from "./storage_faults.ts";

/**
 * Whether the path of the KV file still names the file this process opened. SQLite keeps writing
 * to the file it opened: after `rm`, or a restore moved over it, every write lands in a file the
 * next start-up will not open, so nothing may be acknowledged until the path names it again.
 */
export interface KvFileWatch {
  /** The answer to a write by the last check: undefined while the path names the opened file. */
  refusal(): AppError | undefined;
  /**
   * Checks now; resolves to the refusal. Calls made while a check runs share the next check, so
   * each caller's answer comes from a look taken after it asked.
   */
  verify(): Promise<AppError | undefined>;
  /** One write refused (counted in the episode's lines). */
  refused(): void;
  /** Writes the count line when one is due. */
  tick(): void;
  /** Resolves once no check is running. */
  idle(): Promise<void>;
}

interface FileId {
  dev: number;
  ino: number;
}

async function fileId(path: string): Promise<FileId | "deleted" | string> {
  try {
    const info = await Deno.stat(path);
    return { dev: info.dev, ino: info.ino ?? 0 };
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return "deleted";
    return (error as Error).message;
  }
}

/** Records the file's device and inode now (right after it was opened) and watches them. */
export async function watchKvFile(
  path: string,
  logger: Logger,
  timing: EpisodeTiming = DEFAULT_EPISODE_TIMING,
): Promise<KvFileWatch> {
  const first = await fileId(path);
  if (typeof first !== "object") {
    throw new Error(`KV file ${path} cannot be checked after opening it: ${first}`);
  }
  const opened: FileId = first;
  const episode = createEpisode(logger, {
    still: "kv file still not the one opened",
    ended: "kv file back",
  }, timing);
  let current: AppError | undefined;
  let running: Promise<AppError | undefined> | undefined;
  let queued: Promise<AppError | undefined> | undefined;

  async function look(): Promise<AppError | undefined> {
    const found = await fileId(path);
    if (typeof found === "object" && found.dev === opened.dev && found.ino === opened.ino) {
      if (current !== undefined) episode.end({ path });
      current = undefined;
      return undefined;
    }
    const change = typeof found === "object"
      ? "replaced"
      : found === "deleted"
      ? "deleted"
      : "unreadable";
    current = storageUnavailable(
      change === "unreadable"
        ? "The KV file cannot be checked; nothing was stored, nor will be until it can."
        : `The KV file was ${change} under the running server; nothing was stored, nor will be ` +
          "until it is back or the server restarts.",
    );
    episode.start(`kv file ${change}`, {
      path,
      opened,
      ...(typeof found === "object" ? { found } : change === "unreadable" ? { error: found } : {}),
      writes: "refused",
    });
    return current;
  }

  function verify(): Promise<AppError | undefined> {
    if (running === undefined) {
      running = look().finally(() => {
        running = undefined;
      });
      return running;
    }
    queued ??= running.then(() => {
      queued = undefined;
      return verify();
    });
    return queued;
  }

  return {
    refusal: () => current,
    verify,
    refused: () => episode.count(),
    tick: () => episode.tick(),
    idle: async () => {
      while (running !== undefined || queued !== undefined) await (queued ?? running);
    },
  };
}
