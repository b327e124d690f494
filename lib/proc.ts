/**
 * Reads a Linux /proc file, best effort: undefined where there is none or it cannot be read.
 * Deno lets a program read /proc only with `--allow-all`; with `--allow-run` (which
 * `deno task start` has for its gRPC child) `cat` reads it instead. Never prompts.
 */
export async function readProcText(path: string): Promise<string | undefined> {
  if (Deno.build.os !== "linux") return undefined;
  try {
    return await Deno.readTextFile(path);
  } catch { /* not allowed without --allow-all, or not there */ }
  try {
    if (Deno.permissions.querySync({ name: "run", command: "cat" }).state !== "granted") {
      return undefined;
    }
    const out = await new Deno.Command("cat", {
      args: [path],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).output();
    return out.success ? new TextDecoder().decode(out.stdout) : undefined;
  } catch {
    return undefined;
  }
}

/** This process's soft limit on open files (`ulimit -n`), from /proc/<pid>/limits. */
export async function openFilesLimit(): Promise<number | "unlimited" | undefined> {
  const text = await readProcText(`/proc/${Deno.pid}/limits`);
  const line = text?.split("\n").find((l) => l.startsWith("Max open files"));
  const soft = line?.slice("Max open files".length).trim().split(/\s+/)[0];
  if (soft === "unlimited") return soft;
  return soft === undefined || !/^[0-9]+$/.test(soft) ? undefined : Number(soft);
}
