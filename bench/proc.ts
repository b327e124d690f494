// CPU time and peak memory of a server, read from /proc. A server may run helper processes (the
// gRPC listener can run as a supervised child), so both cover the whole process tree.

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ; 100 on Linux for every common architecture

/** The process and its live descendants (via /proc/<pid>/task/<tid>/children). */
export async function processTree(pid: number): Promise<number[]> {
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    try {
      for await (const task of Deno.readDir(`/proc/${tree[i]}/task`)) {
        const text = await Deno.readTextFile(`/proc/${tree[i]}/task/${task.name}/children`)
          .catch(() => "");
        for (const child of text.split(" ")) if (child.trim()) tree.push(Number(child));
      }
    } catch { /* gone meanwhile */ }
  }
  return tree;
}

async function statFields(pid: number | "self"): Promise<string[] | undefined> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`).catch(() => undefined);
  return stat?.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/**
 * User + system CPU seconds of a process tree: every live process, plus the children each has
 * already reaped (a crashed and restarted helper still counts). NaN when /proc is unavailable.
 */
export async function cpuSeconds(pid: number | "self"): Promise<number> {
  const pids = pid === "self" ? ["self" as const] : await processTree(pid);
  let ticks = 0;
  let found = false;
  for (const p of pids) {
    const f = await statFields(p);
    if (!f) continue;
    found = true;
    ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  }
  return found ? ticks / CLOCK_TICKS_PER_SECOND : NaN;
}

/**
 * The peak memory of a process tree in MiB, each page counted once (NaN without /proc):
 * `total` is `each` summed plus `shared`.
 *
 * Why not the sum of each process's peak RSS (VmHWM): a server of two processes (this one and
 * its gRPC listener child) maps the same `deno` binary twice, and each RSS counts its resident
 * pages (about 45 MiB) in full. Memory the machine holds for the tree is each process's own
 * (anonymous) pages plus the file pages resident in any of them, once. So `each` is a process's
 * peak less its file-backed pages now (VmHWM - RssFile: its peak anonymous memory, as the file
 * part only grows once warmed up), and `shared` is the union of the file pages resident in the
 * tree now (by file and page, from /proc/<pid>/pagemap). For one process, `total` is its VmHWM.
 * Proportional set size is not used: it divides a page among every process mapping it, other
 * programs' too (the bench itself runs on deno), so it would shrink with what else runs.
 */
export async function peakTreeMemory(
  pid: number,
): Promise<{ total: number; each: number[]; shared: number }> {
  const each: number[] = [];
  const pages = new Set<string>();
  let unionKnown = true;
  let fileSum = 0;
  for (const p of await processTree(pid)) {
    const status = await Deno.readTextFile(`/proc/${p}/status`).catch(() => "");
    const kib = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1]);
    const hwm = kib("VmHWM");
    const file = kib("RssFile");
    if (!Number.isFinite(hwm) || !Number.isFinite(file)) continue;
    each.push((hwm - file) / 1024);
    fileSum += file / 1024;
    if (unionKnown) unionKnown = await addFilePages(p, pages);
  }
  if (each.length === 0) return { total: NaN, each, shared: NaN };
  // Without pagemap (another user's process, or no /proc): every process's file pages, as RSS.
  const shared = unionKnown ? (pages.size * PAGE_BYTES) / 2 ** 20 : fileSum;
  return { total: each.reduce((a, b) => a + b, 0) + shared, each, shared };
}

const PAGE_BYTES = 4096;

/** Adds the resident file-backed pages of a process (`dev:inode:page`); false if unreadable. */
async function addFilePages(pid: number, pages: Set<string>): Promise<boolean> {
  let file: Deno.FsFile | undefined;
  try {
    const maps = await Deno.readTextFile(`/proc/${pid}/maps`);
    file = await Deno.open(`/proc/${pid}/pagemap`);
    for (const line of maps.split("\n")) {
      // start-end perms offset dev inode [path]; inode 0 is anonymous memory.
      const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ ([0-9a-f]+) (\S+) (\d+)/.exec(line);
      if (!m || m[5] === "0") continue;
      const start = parseInt(m[1]!, 16) / PAGE_BYTES;
      const count = parseInt(m[2]!, 16) / PAGE_BYTES - start;
      const first = parseInt(m[3]!, 16) / PAGE_BYTES;
      // One 64-bit entry per page; bit 63: present in RAM.
      const entries = new Uint8Array(count * 8);
      await file.seek(start * 8, Deno.SeekMode.Start);
      for (let got = 0; got < entries.length;) {
        const n = await file.read(entries.subarray(got));
        if (n === null) break;
        got += n;
      }
      const key = `${m[4]}:${m[5]}:`;
      for (let i = 0; i < count; i++) {
        if (entries[i * 8 + 7]! & 0x80) pages.add(key + (first + i));
      }
    }
    return true;
  } catch {
    return false;
  } finally {
    file?.close();
  }
}

/** A tree's peak memory as a round reports it: each process's part only when there are several. */
export function memoryOf(
  memory: { total: number; each: number[]; shared: number },
): { peakRssMiB: number; peakRssEachMiB?: number[]; peakSharedMiB?: number } {
  return memory.each.length > 1
    ? { peakRssMiB: memory.total, peakRssEachMiB: memory.each, peakSharedMiB: memory.shared }
    : { peakRssMiB: memory.total };
}
