import type { BenchContext } from "./contenders.ts";
import type { Workload } from "./runner.ts";

/** The scaling workloads (filled in below). */
export function buildScaleWorkloads(_ctx: BenchContext): Promise<Workload[]> {
  return Promise.resolve([]);
}
