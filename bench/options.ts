/** What a bench run does, from environment variables (all optional). */
export interface BenchOptions {
  /** Seconds of each measured round (BENCH_DURATION, default 10). */
  duration: number;
  /** Seconds of load before the first round of each server (BENCH_WARMUP, default 3). */
  warmup: number;
  /** A/B rounds per workload; the median is reported (BENCH_ROUNDS, default 3). */
  rounds: number;
  /** Concurrent HTTP/1.1 connections of wrk (BENCH_CONNECTIONS, default 64). */
  connections: number;
  /** Workload ids to run (BENCH_ONLY, comma-separated); empty runs all. */
  only: string[];
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

/** Reads and validates the bench options. */
export function readOptions(env: Record<string, string>): BenchOptions {
  return {
    duration: positive(env, "BENCH_DURATION", 10),
    warmup: positive(env, "BENCH_WARMUP", 3),
    rounds: Math.round(positive(env, "BENCH_ROUNDS", 3)),
    connections: Math.round(positive(env, "BENCH_CONNECTIONS", 64)),
    only: (env.BENCH_ONLY ?? "").split(",").map((s) => s.trim()).filter((s) => s !== ""),
  };
}
