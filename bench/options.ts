/** What a bench run does, from environment variables (all optional). */
export interface BenchOptions {
  /** Seconds of each measured round (BENCH_DURATION, default 10; 5 in the scaling run). */
  duration: number;
  /** Seconds of unmeasured load before each measured round (BENCH_WARMUP, default 3; 2 scaling). */
  warmup: number;
  /** A/B rounds per workload; medians are reported (BENCH_ROUNDS, default 3; 2 scaling). */
  rounds: number;
  /** Concurrent HTTP/1.1 connections of wrk (BENCH_CONNECTIONS, default 64). */
  connections: number;
  /**
   * Workload ids to run (BENCH_ONLY, comma-separated; `grpc*` selects every id starting with
   * `grpc`); empty runs all.
   */
  only: string[];
  /**
   * Another checkout of this project (BENCH_BASELINE, e.g. a `git worktree` of the commit before
   * a change), run as one more contender in the workloads it can serve, so before and after are
   * measured alternately in the same run.
   */
  baseline?: string;
  /**
   * Addresses the opt-in scaling row `scale-1m` fills, walks and exports (BENCH_SCALE_ADDRESSES,
   * default 1,000,000; smaller for a quick try of that row).
   */
  scaleAddresses: number;
}

function positive(env: Record<string, string>, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    throw new Error(`invalid ${name}=${JSON.stringify(raw)}: must be a positive number`);
  }
  return value;
}

/** Reads and validates the bench options; the scaling run has shorter defaults. */
export function readOptions(env: Record<string, string>, scale = false): BenchOptions {
  return {
    duration: positive(env, "BENCH_DURATION", scale ? 5 : 10),
    warmup: positive(env, "BENCH_WARMUP", scale ? 2 : 3),
    rounds: Math.round(positive(env, "BENCH_ROUNDS", scale ? 2 : 3)),
    connections: Math.round(positive(env, "BENCH_CONNECTIONS", 64)),
    only: (env.BENCH_ONLY ?? "").split(",").map((s) => s.trim()).filter((s) => s !== ""),
    ...(env.BENCH_BASELINE ? { baseline: env.BENCH_BASELINE.replace(/\/+$/, "") } : {}),
    scaleAddresses: Math.round(positive(env, "BENCH_SCALE_ADDRESSES", 1_000_000)),
  };
}

/**
 * Whether a workload id is selected by BENCH_ONLY (everything when it is empty); an opt-in
 * workload only when BENCH_ONLY names it.
 */
export function selects(only: readonly string[], id: string, optIn = false): boolean {
  if (optIn) return only.includes(id);
  return only.length === 0 ||
    only.some((pattern) =>
      pattern.endsWith("*") ? id.startsWith(pattern.slice(0, -1)) : pattern === id
    );
}

/** The BENCH_ONLY entries that select none of `ids` (a typo would silently run nothing). */
export function unmatched(only: readonly string[], ids: readonly string[]): string[] {
  return only.filter((pattern) => !ids.some((id) => selects([pattern], id)));
}
