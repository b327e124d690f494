import { median } from "./stats.ts";
import type { WireBytes } from "./wire_bytes.ts";

/** One measured round of one contender. */
export interface Measurement {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  seconds: number;
  /** Responses that failed a check (status, size, grpc-status, durability, duplicates). */
  failures: number;
  firstFailure: string;
  /** Server CPU time (all threads) per request in µs: robust to load from other processes. */
  cpuUsPerRequest?: number;
  /** Answers that were sound but not what a `misses` target asks for (e.g. a 409 of a quota). */
  misses?: number;
  /** Peak RSS when the contender runs a fresh process per round. */
  peakRssMiB?: number;
  /** Peak RSS of each process when the server runs several (e.g. a supervised gRPC child). */
  peakRssEachMiB?: number[];
  /** File pages resident in the tree, counted once, when the server runs several processes. */
  peakSharedMiB?: number;
  notes?: string[];
}

/** What a contender reports when it is finished. */
export interface Finish {
  peakRssMiB: number;
  /** Peak RSS of each process when the server runs several (e.g. a supervised gRPC child). */
  peakRssEachMiB?: number[];
  peakSharedMiB?: number;
  failures?: number;
  notes?: string[];
  /** Bytes on the wire per request, each way, measured once (bench/wire_bytes.ts). */
  wire?: WireBytes;
}

/** One side of a comparison: this project's server, a ceiling, a peer, or extra information. */
export interface Contender {
  name: string;
  role: "ours" | "ceiling" | "peer" | "info";
  /** Measured in the first round only (information, not part of a target). */
  once?: boolean;
  /** Starts the process (and warms it up, when it has no `warm`). */
  prepare(): Promise<void>;
  /**
   * Loads it, unmeasured, right before each measured round. Why: a server left idle while the
   * others ran answers its next seconds slower, ceilings too (docs/bench.md); warmed, every round
   * measures a server under steady load, whatever ran before it.
   */
  warm?(): Promise<void>;
  measure(round: number): Promise<Measurement>;
  /** Stops the process (after final checks). */
  finish(): Promise<Finish>;
}

/**
 * A target, judged on ours. By req/s (the default): ours ÷ `against` ≥ `min`, by the median of
 * per-round ratios. By p99: ours' p99 ÷ `against`'s ≤ `max`, also the median of per-round
 * ratios. By memory: ours' peak memory (MiB, the highest round) ≤ `max`, or with `against`, ours'
 * peak ÷ its peak ≤ `max`. By misses: ours' misses over all rounds ≤ `max` (`what` names them).
 */
export type Target =
  | { measure?: "rps"; against: string; min: number }
  | { measure: "p99"; against: string; max: number }
  | { measure: "memory"; max: number; against?: string }
  | { measure: "misses"; max: number; what: string };

/** A workload: the same load against each contender, alternating order each round. */
export interface Workload {
  id: string;
  title: string;
  /** How the load is generated (tool, connections, streams). */
  load: string;
  /** What is checked on every response. */
  checks: string;
  contenders: Contender[];
  targets: Target[];
  /** Set when the workload cannot run; the reason is reported instead of failing the run. */
  skipped?: string;
  /** Said with the table, e.g. a peer left out because its toolchain is not installed. */
  notes?: string[];
  /** Print each contender's notes under the table (what a row measured, when it is not req/s). */
  showNotes?: boolean;
  /** Runs only when BENCH_ONLY names its id (a long run kept out of the default set). */
  optIn?: boolean;
  /** What the ratio columns compare with, when not "ours" (the contender of role "ours"). */
  reference?: string;
}

/** Medians of one contender over the rounds. */
export interface ContenderResult {
  name: string;
  role: Contender["role"];
  rps: number;
  p50Ms: number;
  p99Ms: number;
  peakRssMiB: number;
  /** Per process, from the round with the highest total, when the server runs several. */
  peakRssEachMiB?: number[];
  /** The file pages they share, counted once, from the same round. */
  peakSharedMiB?: number;
  cpuUsPerRequest: number;
  requests: number;
  failures: number;
  firstFailure: string;
  /** Median over rounds of ours.rps ÷ this.rps (undefined for ours). */
  ratio?: number;
  /** Median over rounds of this.cpuUsPerRequest ÷ ours.cpuUsPerRequest (undefined for ours). */
  cpuRatio?: number;
  rounds: Measurement[];
  notes: string[];
  wire?: WireBytes;
}

/** The outcome of one workload. */
export interface WorkloadResult {
  id: string;
  title: string;
  load: string;
  checks: string;
  skipped?: string;
  error?: string;
  notes?: string[];
  showNotes?: boolean;
  reference?: string;
  contenders: ContenderResult[];
  /**
   * `ratio`: what was measured against the target (MiB for memory); `checksFailed`: a contender
   * it compares failed a check, so its figure means nothing and the target is not met.
   */
  targets: (Target & { ratio: number | undefined; met: boolean; checksFailed: boolean })[];
}

/**
 * Runs a workload: prepares every contender, then `rounds` rounds in alternating order (A B, B A,
 * …) so drift on a busy machine hits both sides alike, each contender warmed right before its
 * measurement, then finishes them. Ratios are medians of the per-round ratios, which pairs
 * measurements taken close together in time.
 */
export async function runWorkload(
  workload: Workload,
  rounds: number,
  log: (line: string) => void,
): Promise<WorkloadResult> {
  const base = {
    id: workload.id,
    title: workload.title,
    load: workload.load,
    ...(workload.notes?.length ? { notes: workload.notes } : {}),
    ...(workload.showNotes ? { showNotes: true } : {}),
    ...(workload.reference ? { reference: workload.reference } : {}),
  };
  const result: WorkloadResult = { ...base, checks: workload.checks, contenders: [], targets: [] };
  if (workload.skipped) return { ...result, skipped: workload.skipped };
  const measured = new Map<Contender, Measurement[]>(workload.contenders.map((c) => [c, []]));
  const finishes = new Map<Contender, Finish>();
  const prepared: Contender[] = [];
  try {
    for (const c of workload.contenders) {
      log(`  ${workload.id}: starting ${c.name}`);
      prepared.push(c);
      await c.prepare();
    }
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? workload.contenders : workload.contenders.toReversed();
      for (const c of order) {
        if (c.once && round > 0) continue;
        await c.warm?.();
        const m = await c.measure(round);
        measured.get(c)!.push(m);
        const bad = m.failures > 0 ? `, ${m.failures} FAILED: ${m.firstFailure}` : "";
        log(`  ${workload.id} round ${round + 1}/${rounds} ${c.name}: ${fmt(m.rps)} req/s${bad}`);
      }
    }
  } catch (error) {
    result.error = error instanceof Error ? error.message : String(error);
    log(`  ${workload.id}: ERROR ${result.error}`);
  } finally {
    for (const c of prepared) {
      try {
        finishes.set(c, await c.finish());
      } catch (error) {
        finishes.set(c, { peakRssMiB: NaN, failures: 1, notes: [`finish: ${error}`] });
      }
    }
  }
  if (result.error) return result;
  const ours = workload.contenders.find((c) => c.role === "ours");
  const oursRounds = ours ? measured.get(ours)! : [];
  for (const c of workload.contenders) {
    const ms = measured.get(c)!;
    const fin = finishes.get(c);
    const roundRss = ms.map((m) => m.peakRssMiB ?? NaN).filter((x) => !Number.isNaN(x));
    const ratios = c === ours
      ? []
      : ms.map((m, i) => (oursRounds[i]?.rps ?? NaN) / m.rps).filter((x) => Number.isFinite(x));
    const cpuRatios = c === ours
      ? []
      : ms.map((m, i) => (m.cpuUsPerRequest ?? NaN) / (oursRounds[i]?.cpuUsPerRequest ?? NaN))
        .filter((x) => Number.isFinite(x));
    const failed = ms.find((m) => m.failures > 0);
    const highest = ms.filter((m) => (m.peakRssEachMiB?.length ?? 0) > 1)
      .sort((a, b) => (b.peakRssMiB ?? 0) - (a.peakRssMiB ?? 0))[0];
    const fromFinish = roundRss.length === 0 && (fin?.peakRssEachMiB?.length ?? 0) > 1;
    const each = highest?.peakRssEachMiB ?? (fromFinish ? fin?.peakRssEachMiB : undefined);
    const shared = highest ? highest.peakSharedMiB : fromFinish ? fin?.peakSharedMiB : undefined;
    result.contenders.push({
      name: c.name,
      role: c.role,
      rps: median(ms.map((m) => m.rps)),
      p50Ms: median(ms.map((m) => m.p50Ms)),
      p99Ms: median(ms.map((m) => m.p99Ms)),
      peakRssMiB: roundRss.length > 0 ? Math.max(...roundRss) : fin?.peakRssMiB ?? NaN,
      ...(each ? { peakRssEachMiB: each } : {}),
      ...(shared !== undefined ? { peakSharedMiB: shared } : {}),
      cpuUsPerRequest: median(ms.map((m) => m.cpuUsPerRequest ?? NaN)),
      requests: ms.reduce((sum, m) => sum + m.requests, 0),
      failures: ms.reduce((sum, m) => sum + m.failures, 0) + (fin?.failures ?? 0),
      firstFailure: failed?.firstFailure ?? (fin?.failures ? fin.notes?.join("; ") ?? "" : ""),
      ratio: c === ours ? undefined : ratios.length > 0 ? median(ratios) : undefined,
      cpuRatio: cpuRatios.length > 0 ? median(cpuRatios) : undefined,
      rounds: ms,
      notes: [...ms.flatMap((m) => m.notes ?? []), ...(fin?.notes ?? [])],
      ...(fin?.wire ? { wire: fin.wire } : {}),
    });
  }
  const oursResult = result.contenders.find((c) => c.role === "ours");
  const within = (value: number | undefined, max: number, clean: boolean) => {
    const ratio = value !== undefined && Number.isFinite(value) ? value : undefined;
    return { ratio, met: ratio !== undefined && ratio <= max && clean, checksFailed: !clean };
  };
  for (const target of workload.targets) {
    if (target.measure === "misses") {
      const misses = oursResult?.rounds.reduce((sum, m) => sum + (m.misses ?? NaN), 0);
      result.targets.push({
        ...target,
        ...within(misses, target.max, (oursResult?.failures ?? 1) === 0),
      });
      continue;
    }
    const other = target.against === undefined
      ? undefined
      : result.contenders.find((c) => c.name === target.against);
    if (target.measure === "memory") {
      const mib = oursResult?.peakRssMiB;
      const clean = (oursResult?.failures ?? 1) === 0 &&
        (target.against === undefined || (other?.failures ?? 1) === 0);
      const value = target.against === undefined ? mib : (mib ?? NaN) / (other?.peakRssMiB ?? NaN);
      result.targets.push({ ...target, ...within(value, target.max, clean) });
      continue;
    }
    const clean = (oursResult?.failures ?? 1) === 0 && (other?.failures ?? 1) === 0;
    if (target.measure === "p99") {
      const ratios = (other?.rounds ?? [])
        .map((m, i) => (oursResult?.rounds[i]?.p99Ms ?? NaN) / m.p99Ms)
        .filter((x) => Number.isFinite(x));
      const ratio = ratios.length > 0 ? median(ratios) : undefined;
      result.targets.push({ ...target, ...within(ratio, target.max, clean) });
      continue;
    }
    const ratio = other?.ratio;
    result.targets.push({
      ...target,
      ratio,
      met: ratio !== undefined && ratio >= target.min && clean,
      checksFailed: !clean,
    });
  }
  return result;
}

/** A number with thousands separators and no decimals. */
export function fmt(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "-";
}
