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

/** Sum of the peak resident set sizes (VmHWM) of a process tree in MiB, or NaN. */
export async function peakRssMiB(pid: number): Promise<number> {
  const each = await peakRssEachMiB(pid);
  return each.length > 0 ? each.reduce((a, b) => a + b, 0) : NaN;
}

/** The peak resident set size (VmHWM) in MiB of each live process of a tree, root first. */
export async function peakRssEachMiB(pid: number): Promise<number[]> {
  const each: number[] = [];
  for (const p of await processTree(pid)) {
    const status = await Deno.readTextFile(`/proc/${p}/status`).catch(() => "");
    const match = /^VmHWM:\s+(\d+) kB/m.exec(status);
    if (match) each.push(Number(match[1]) / 1024);
  }
  return each;
}
