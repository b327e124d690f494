import { basename } from "node:path";
import type { Logger } from "../../lib/log.ts";
import { readProcText } from "../../lib/proc.ts";

/** A lock another process holds on the KV file or its `-wal`/`-shm` companions. */
interface LockHolder {
  pid: number;
  /** The process's name (`/proc/<pid>/comm`), never its arguments: they may carry secrets. */
  process: string | undefined;
  file: string;
  lock: "write" | "read";
  /** What SQLite uses the locked bytes for, when known. */
  meaning: string | undefined;
}

// Linux's user-space dev_t (glibc's makedev) to the major and minor /proc/locks prints in hex.
function majorMinor(dev: number): string {
  const high = Math.floor(dev / 2 ** 32);
  const low = dev % 2 ** 32;
  const major = ((low >>> 8) & 0xfff) | ((high & 0xfffff000) >>> 0);
  const minor = (low & 0xff) | ((low >>> 12) & 0xfff00);
  return `${major.toString(16).padStart(2, "0")}:${minor.toString(16).padStart(2, "0")}`;
}

// SQLite's lock bytes: the database file's lock region starts at 1 GiB (PENDING_BYTE); in WAL
// mode the shm file's byte 120 is the writer's lock, 121 the checkpointer's, 122 recovery's.
function meaningOf(file: string, start: string, write: boolean): string | undefined {
  if (file.endsWith("-shm")) {
    const byte = Number(start);
    if (byte === 120) return "WAL writer";
    if (byte === 121) return "checkpoint";
    if (byte === 122) return "WAL recovery";
    return byte >= 123 ? "WAL reader" : undefined;
  }
  if (Number(start) >= 1073741824) return write ? "exclusive" : "shared";
  return undefined;
}

/**
 * Who holds locks on the KV file (Linux: /proc/locks), write locks first; empty where that cannot
 * be read. Best effort: only for the log line that explains a wait.
 */
async function kvLockHolders(path: string): Promise<LockHolder[]> {
  const files = new Map<string, string>();
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      const info = await Deno.stat(file);
      if (info.ino !== null) files.set(`${majorMinor(info.dev)}:${info.ino}`, basename(file));
    } catch { /* not there (yet) */ }
  }
  const table = await readProcText("/proc/locks");
  if (table === undefined) return [];
  const holders: LockHolder[] = [];
  for (const line of table.split("\n")) {
    // "1: POSIX  ADVISORY  WRITE 7404 fe:00:2146413 120 120"; waiters carry "->" and are skipped.
    const fields = line.trim().split(/\s+/);
    if (fields.includes("->") || fields.length < 8) continue;
    const [, , , mode, pidText, id, start] = fields;
    const file = files.get(id!);
    const pid = Number(pidText);
    if (file === undefined || pid === Deno.pid || !(pid > 0)) continue;
    holders.push({
      pid,
      process: (await readProcText(`/proc/${pid}/comm`))?.trim(),
      file,
      lock: mode === "WRITE" ? "write" : "read",
      meaning: meaningOf(file, start!, mode === "WRITE"),
    });
  }
  return holders.sort((a, b) => (a.lock === b.lock ? 0 : a.lock === "write" ? -1 : 1));
}

function describe(holder: LockHolder): string {
  return `${holder.lock} lock on ${holder.file}` +
    (holder.meaning === undefined ? "" : ` (${holder.meaning})`) +
    ` held by pid ${holder.pid}` + (holder.process === undefined ? "" : ` (${holder.process})`);
}

/**
 * Opening a KV file waits, silently, while another process holds a lock on it, and Deno's
 * `openKv` waits on the event loop's thread, so no timer fires meanwhile. So this looks before
 * the file is opened: an exclusive lock held now is named in the log at once (with the path).
 * While opening and loading go on, it looks again after `afterMs` and every `everyMs`, and says
 * when the wait ended.
 */
export async function explainKvWait(
  path: string,
  logger: Logger,
  timing: { afterMs: number; everyMs: number } = { afterMs: 1000, everyMs: 10_000 },
): Promise<{ done(): void }> {
  const started = Date.now();
  let logged = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  function report(holders: LockHolder[]): void {
    const first = holders[0];
    logger.warn(first === undefined ? "kv slow to open" : "kv locked", {
      path,
      lock: first === undefined ? undefined : describe(first),
      holders: holders.length > 1 ? holders : undefined,
      waitedS: Math.round((Date.now() - started) / 1000),
    });
    logger.flush();
    logged = true;
  }

  async function explain() {
    const holders = await kvLockHolders(path);
    if (timer === undefined) return;
    report(holders);
    timer = setTimeout(explain, timing.everyMs);
  }

  // Only an exclusive lock stops opening; a writer's lock in WAL mode comes and goes.
  const now = await kvLockHolders(path);
  if (now.some((h) => h.meaning === "exclusive" && h.lock === "write")) report(now);
  timer = setTimeout(explain, timing.afterMs);
  return {
    done() {
      clearTimeout(timer);
      timer = undefined;
      if (logged) logger.always("kv lock released", { path, waitedMs: Date.now() - started });
    },
  };
}
