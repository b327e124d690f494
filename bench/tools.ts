/** External programs the bench drives, and how client and server are kept apart on the CPU. */
export interface Tools {
  wrk: boolean;
  h2load: boolean;
  node: boolean;
  /** CPU list for servers and peers, e.g. "1"; undefined when not pinned. */
  serverCpus: string | undefined;
  /** CPU list for the load generators, e.g. "0"; undefined when not pinned. */
  clientCpus: string | undefined;
  cores: number;
}

async function has(command: string, args: string[]): Promise<boolean> {
  try {
    const out = await new Deno.Command(command, { args, stdout: "null", stderr: "null" }).output();
    // wrk has no --version; it prints usage and exits 1, which still proves it is there.
    return out.code === 0 || out.code === 1;
  } catch {
    return false;
  }
}

/** Looks for wrk, h2load, node and taskset and splits the cores between clients and servers. */
export async function detectTools(): Promise<Tools> {
  const [wrk, h2load, node, taskset] = await Promise.all([
    has("wrk", ["--version"]),
    has("h2load", ["--version"]),
    has("node", ["--version"]),
    has("taskset", ["--version"]),
  ]);
  const cores = navigator.hardwareConcurrency;
  let serverCpus: string | undefined;
  let clientCpus: string | undefined;
  if (taskset && cores >= 2) {
    // Servers get the upper half, load generators the lower half (one core each on 2 cores).
    const split = Math.floor(cores / 2);
    clientCpus = split === 1 ? "0" : `0-${split - 1}`;
    serverCpus = split === cores - 1 ? `${split}` : `${split}-${cores - 1}`;
  }
  return { wrk, h2load, node, serverCpus, clientCpus, cores };
}

/** Human-readable lines naming what is missing and how to get it. */
export function missingTools(tools: Tools): string[] {
  const lines: string[] = [];
  if (!tools.wrk) lines.push("wrk (Debian package `wrk`): needed for every HTTP workload");
  if (!tools.h2load) {
    lines.push("h2load (Debian package `nghttp2-client`): needed for the gRPC workload");
  }
  if (!tools.node) lines.push("node (Node.js 18+): needed for the @grpc/grpc-js peer");
  return lines;
}

/**
 * Moves this process (all its threads) to the load generators' cores, so reading the servers'
 * logs and checking answers does not take CPU from the servers.
 */
export async function pinSelf(cpus: string | undefined): Promise<void> {
  if (cpus === undefined) return;
  await new Deno.Command("taskset", {
    args: ["-a", "-c", "-p", cpus, String(Deno.pid)],
    stdout: "null",
    stderr: "null",
  }).output();
}

/** Prefixes a command with `taskset -c <cpus>` when pinning is available. */
export function pinned(cpus: string | undefined, command: string[]): string[] {
  return cpus === undefined ? command : ["taskset", "-c", cpus, ...command];
}
