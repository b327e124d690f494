import { AppError } from "../../lib/errors.ts";
import type { Logger } from "../../lib/log.ts";
import { guardKv } from "./guard.ts";
import type { WriteLock } from "./write_lock.ts";
import { type KvFileWatch, watchKvFile } from "./identity.ts";
import { createEpisode, DEFAULT_EPISODE_TIMING, type EpisodeTiming } from "./storage_episode.ts";
import { storageFault, storageUnavailable } from "./storage_faults.ts";

/** Whether storage takes writes now, as readiness reports it. */
export interface StorageHealth {
  /**
   * Undefined when the KV file is the one opened and writes work; else the error readiness
   * answers with. Without a successful write in the last `probeFreshMs`, writes the probe key.
   */
  readiness(): Promise<AppError | undefined>;
  /** Stops the timer and waits for a running probe or check (before the KV is closed). */
  close(): Promise<void>;
}

interface StorageOptions {
  logger: Logger;
  /** How log lines name the KV (never a URL: it may carry a token). */
  label: string;
  /** The KV file whose device and inode are watched; undefined for `:memory:`, URLs, platform. */
  file?: string | undefined;
  /** Period of the file check and, while writes fail, of the probe write. */
  tickMs?: number;
  /** How recent a successful write must be for readiness to skip the probe. */
  probeFreshMs?: number;
  /** Size of the probe's value: a write as large as a small batch of creations. */
  probeBytes?: number;
  /** Commits go through it (a KV file's write lock, write_lock.ts); closed with the health. */
  writeLock?: WriteLock | undefined;
  timing?: EpisodeTiming;
}

/** The key the probe writes; nothing reads it. */
const PROBE_KEY: Deno.KvKey = ["health", "write-probe"];

/**
 * Wraps the KV handle the store will use (guard.ts) and watches what readiness needs: whether
 * writes work (a fault starts an episode that the next successful write ends; while it lasts a
 * probe write runs every tick, so readiness recovers with no client writing) and, for a KV file,
 * whether the path still names the file opened (identity.ts).
 */
export async function guardStorage(
  kv: Deno.Kv,
  options: StorageOptions,
): Promise<{ kv: Deno.Kv; health: StorageHealth }> {
  const { logger, label } = options;
  const tickMs = options.tickMs ?? 1000;
  const probeFreshMs = options.probeFreshMs ?? 1000;
  const pad = "p".repeat(options.probeBytes ?? 4096);
  const timing = options.timing ?? DEFAULT_EPISODE_TIMING;
  const file: KvFileWatch | undefined = options.file === undefined
    ? undefined
    : await watchKvFile(options.file, logger, timing);
  const episode = createEpisode(logger, {
    still: "storage still failing",
    ended: "storage works again",
  }, timing);
  // What readiness answers while storage fails, and whether a read or a write failed first: a
  // client's successful write ends a write fault; only the probe (a write and a read) ends both.
  let failing: { error: AppError; op: "read" | "write" } | undefined;
  let lastWriteOk = 0;
  let probing: Promise<AppError | undefined> | undefined;

  function succeeded(probed: boolean): void {
    lastWriteOk = Date.now();
    if (failing === undefined || (failing.op === "read" && !probed)) return;
    failing = undefined;
    episode.end({ kv: label });
  }

  function storageFailed(reason: string, error: unknown, write: boolean): AppError {
    episode.start("storage failing", {
      kv: label,
      reason,
      op: write ? "write" : "read",
      error: (error as Error).message,
    });
    failing ??= {
      error: storageUnavailable(`Storage cannot be ${write ? "written" : "read"} (${reason}).`),
      op: write ? "write" : "read",
    };
    return storageUnavailable(
      write
        ? `Storage cannot be written (${reason}); nothing was stored.`
        : `Storage cannot be read (${reason}).`,
      error,
    );
  }

  const guarded = guardKv(kv, {
    // Looked at before the write, not only after it: SQLite's WAL is found by the file's name,
    // so a write into a file that is not at the path any more would reach, through the WAL the
    // next start-up finds, whatever file is there now.
    async beforeWrite() {
      const refusal = await file?.verify();
      if (refusal === undefined) return;
      file!.refused();
      throw refusal;
    },
    async afterWrite() {
      const refusal = await file?.verify();
      if (refusal !== undefined) {
        file!.refused();
        throw storageUnavailable(
          "The KV file changed while this write was committed: it is not acknowledged, and may " +
            "not be kept.",
        );
      }
      succeeded(false);
    },
    failed(error, write) {
      const reason = storageFault(error);
      if (reason === undefined) return error;
      const mapped = storageFailed(reason, error, write);
      episode.count();
      return mapped;
    },
    ...(options.writeLock && { commit: options.writeLock.commit }),
  });

  /**
   * Writes the probe key and reads it back through the raw handle (so a probe is not counted as a
   * client's failure); resolves to what readiness should answer.
   */
  function probe(): Promise<AppError | undefined> {
    probing ??= (async () => {
      const refusal = file?.refusal();
      if (refusal !== undefined) return refusal;
      let write = true;
      try {
        await kv.set(PROBE_KEY, { at: Date.now(), pad });
        write = false;
        await kv.get(PROBE_KEY);
      } catch (error) {
        const reason = storageFault(error);
        if (reason !== undefined) storageFailed(reason, error, write);
        return failing?.error ??
          new AppError("service-unavailable", "The storage probe failed.", {
            retryAfter: 1,
            cause: error,
          });
      }
      const lost = await file?.verify();
      if (lost !== undefined) return lost;
      succeeded(true);
      return undefined;
    })().finally(() => {
      probing = undefined;
    });
    return probing;
  }

  const timer = setInterval(() => {
    if (file !== undefined) {
      void file.verify();
      file.tick();
    }
    if (failing !== undefined) {
      void probe();
      episode.tick();
    }
  }, tickMs);
  // Storage watching alone never keeps the process alive.
  Deno.unrefTimer(timer);

  const health: StorageHealth = {
    async readiness() {
      const refusal = file === undefined ? undefined : await file.verify();
      if (refusal !== undefined) return refusal;
      if (failing !== undefined) return failing.error;
      if (Date.now() - lastWriteOk <= probeFreshMs) return undefined;
      return await probe();
    },
    async close() {
      clearInterval(timer);
      await probing;
      await file?.idle();
      options.writeLock?.close();
    },
  };
  return { kv: guarded, health };
}
