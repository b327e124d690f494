import type { BenchOptions } from "./options.ts";
import type { Contender, Finish, Measurement } from "./runner.ts";
import type { Service } from "./service.ts";
import { memoryOf } from "./proc.ts";
import type { Tools } from "./tools.ts";
import { runWrk, type WrkRun } from "./wrk.ts";

/** What every contender needs from the run. */
export interface BenchContext {
  root: string;
  /** Scratch directory of this run (removed at the end). */
  tmp: string;
  opts: BenchOptions;
  tools: Tools;
}

/** The parts of a wrk run a workload decides. */
export type WrkLoad = Pick<
  WrkRun,
  "status" | "lengths" | "method" | "bodyFile" | "contentType" | "pathsFile"
>;

/**
 * A long-running HTTP server loaded by wrk: started and warmed up once, then measured each round.
 * `verify` runs after start-up (e.g. to learn a peer's response size) and may adjust the load.
 */
export function httpContender(spec: {
  ctx: BenchContext;
  name: string;
  role: Contender["role"];
  start: () => Promise<Service>;
  path: string;
  load: WrkLoad;
  verify?: (service: Service, url: string) => Promise<Partial<WrkLoad> & { notes?: string[] }>;
  /** Count the lines it writes to stdout per round (default: ours only; its access log). */
  countLog?: boolean;
  /** wrk's connections (default BENCH_CONNECTIONS). */
  connections?: number;
}): Contender {
  const { ctx } = spec;
  let service: Service | undefined;
  let load = spec.load;
  const notes: string[] = [];
  let url = "";

  function run(seconds: number) {
    return runWrk({
      ...load,
      url,
      seconds,
      connections: spec.connections ?? ctx.opts.connections,
      cpus: ctx.tools.clientCpus,
    });
  }

  async function warm() {
    const r = await run(ctx.opts.warmup);
    if (r.failures > 0) throw new Error(`${spec.name} failed its checks: ${r.firstFailure}`);
  }

  return {
    name: spec.name,
    role: spec.role,
    async prepare() {
      service = await spec.start();
      url = `${String(service.listening.http)}${spec.path}`;
      if (spec.verify) {
        const { notes: extra, ...changes } = await spec.verify(service, url);
        load = { ...load, ...changes };
        notes.push(...(extra ?? []));
      }
      // Warmed (and its checks first run) right before each round, the first included.
    },
    warm,
    async measure(): Promise<Measurement> {
      const logLines = service!.stdoutLines();
      const cpu = await service!.cpuSeconds();
      const r = await run(ctx.opts.duration);
      const cpuUsPerRequest = (await service!.cpuSeconds() - cpu) * 1e6 / r.requests;
      const logged = service!.stdoutLines() - logLines;
      return {
        ...r,
        cpuUsPerRequest,
        notes: (spec.countLog ?? spec.role === "ours")
          ? [`${logged} log lines for ${r.requests} requests`]
          : [],
      };
    },
    async finish(): Promise<Finish> {
      if (!service) return { peakRssMiB: NaN, notes };
      const memory = await service.peakMemory();
      await service.stop();
      return { ...memoryOf(memory), notes };
    },
  };
}
