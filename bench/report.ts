import type { BenchOptions } from "./options.ts";
import { fmt, type WorkloadResult } from "./runner.ts";
import { median } from "./stats.ts";
import type { Tools } from "./tools.ts";
import { MATRIX_PREFIX, matrixTable } from "./matrix/table.ts";

function isMatrix(w: WorkloadResult): boolean {
  return w.id.startsWith(MATRIX_PREFIX);
}

/** The machine and settings a run was measured on. */
export interface RunMeta {
  date: string;
  cpu: string;
  cores: number;
  memoryGiB: number;
  kernel: string;
  deno: string;
  node: string;
  wrk: string;
  h2load: string;
  go: string;
  pinning: string;
  loadAverageBefore: string;
  loadAverageAfter?: string;
  options: BenchOptions;
}

async function firstLine(command: string, args: string[]): Promise<string> {
  try {
    const out = await new Deno.Command(command, { args, stdout: "piped", stderr: "piped" })
      .output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    return text.split("\n").find((l) => l.trim() !== "")?.trim() ?? "";
  } catch {
    return "not installed";
  }
}

/** Reads /proc/loadavg (1, 5 and 15 minute averages). */
export async function loadAverage(): Promise<string> {
  const text = await Deno.readTextFile("/proc/loadavg").catch(() => "");
  return text.split(" ").slice(0, 3).join(" ");
}

/** Describes the machine, tools and options of this run. */
export async function describeRun(tools: Tools, options: BenchOptions): Promise<RunMeta> {
  const cpuinfo = await Deno.readTextFile("/proc/cpuinfo").catch(() => "");
  const memory = Deno.systemMemoryInfo();
  return {
    date: new Date().toISOString(),
    cpu: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? "unknown",
    cores: tools.cores,
    memoryGiB: Math.round(memory.total / 2 ** 30),
    kernel: `${Deno.build.os} ${Deno.osRelease()}`,
    deno: Deno.version.deno,
    node: await firstLine("node", ["--version"]),
    wrk: (await firstLine("wrk", ["--version"])).replace(/ Copyright.*/, ""),
    h2load: await firstLine("h2load", ["--version"]),
    go: (await firstLine("go", ["version"])).replace(/^go version /, ""),
    pinning: tools.serverCpus === undefined
      ? "none (taskset missing or one core): client and server share the CPU"
      : `servers on CPU ${tools.serverCpus}, load generators on CPU ${tools.clientCpus}`,
    loadAverageBefore: await loadAverage(),
    options,
  };
}

const ms = (n: number) => Number.isFinite(n) ? n.toFixed(2) : "-";
const us = (n: number) => Number.isFinite(n) ? n.toFixed(1) : "-";
const mib = (n: number) => Number.isFinite(n) ? n.toFixed(0) : "-";

/**
 * Peak memory; for a server of several processes also each one's own and the file pages they
 * share, counted once (e.g. `131 (41 + 42 + 48 shared)`; proc.ts, peakTreeMemory).
 */
function rssCell(c: WorkloadResult["contenders"][number]): string {
  const each = c.peakRssEachMiB;
  if (!each || each.length < 2) return mib(c.peakRssMiB);
  const shared = c.peakSharedMiB === undefined ? "" : ` + ${mib(c.peakSharedMiB)} shared`;
  return `${mib(c.peakRssMiB)} (${each.map(mib).join(" + ")}${shared})`;
}

function ratioCell(w: WorkloadResult, name: string, ratio: number | undefined): string {
  if (ratio === undefined) return "";
  const target = w.targets.find((t) =>
    (t.measure === undefined || t.measure === "rps") && t.against === name
  );
  const text = `${ratio.toFixed(2)}×`;
  if (target?.checksFailed) return "- (failed checks)";
  if (!target || !("min" in target)) return text;
  return `${text} (target ≥ ${target.min}: ${target.met ? "met" : "MISSED"})`;
}

/** Bytes on the wire per request: request + response. */
function wireCell(c: WorkloadResult["contenders"][number]): string {
  const w = c.wire;
  return w ? `${Math.round(w.request)} + ${Math.round(w.response)}` : "-";
}

/** One workload as a Markdown table. */
export function workloadTable(w: WorkloadResult): string {
  const lines = [`### ${w.title}`, ""];
  if (w.skipped) return [...lines, `skipped: ${w.skipped}`, ""].join("\n");
  if (w.error) return [...lines, `error: ${w.error}`, ""].join("\n");
  lines.push(`Load: ${w.load}. Checked: ${w.checks}.`, "");
  for (const note of w.notes ?? []) lines.push(`Note: ${note}`, "");
  const ref = w.reference ?? "ours";
  const wire = w.contenders.some((c) => c.wire);
  lines.push(
    `| contender | req/s | p50 ms | p99 ms | peak memory MiB | server CPU µs/req |${
      wire ? " wire bytes/req (request + response) |" : ""
    } ${ref} ÷ it (req/s) | ${ref} ÷ it (CPU/req) | failed checks |`,
    `|---|---:|---:|---:|---:|---:|${wire ? "---:|" : ""}---|---:|---:|`,
  );
  for (const c of w.contenders) {
    const label = c.role === "ceiling" ? `${c.name} (ceiling)` : c.name;
    // A contender that failed a check has no speed to report: what it answered was not right.
    const failed = c.failures > 0;
    const speed = (text: string) => (failed ? "failed" : text);
    lines.push(
      `| ${label} | ${speed(fmt(c.rps))} | ${speed(ms(c.p50Ms))} | ${speed(ms(c.p99Ms))} | ${
        rssCell(c)
      } | ${speed(us(c.cpuUsPerRequest))} |${wire ? ` ${wireCell(c)} |` : ""} ${
        failed ? "" : ratioCell(w, c.name, c.ratio)
      } | ${failed || c.cpuRatio === undefined ? "" : `${c.cpuRatio.toFixed(2)}×`} | ${c.failures}${
        failed ? ` (${c.firstFailure})` : ""
      } |`,
    );
  }
  if (w.showNotes) {
    lines.push("");
    for (const c of w.contenders) for (const note of c.notes) lines.push(`- ${c.name}: ${note}`);
  }
  return [...lines, ""].join("\n");
}

/** The header naming the machine, then every workload's table and the target summary. */
export function fullReport(meta: RunMeta, results: WorkloadResult[]): string {
  const o = meta.options;
  const head = [
    `Machine: ${meta.cpu}, ${meta.cores} cores, ${meta.memoryGiB} GiB, ${meta.kernel}. ` +
    `Deno ${meta.deno}, Node ${meta.node}, ${meta.wrk}, ${meta.h2load}, Go ${meta.go}.`,
    `Run ${meta.date}: ${o.rounds} rounds × ${o.duration} s per contender (each after ${o.warmup} ` +
    `s of warm-up), medians; ${meta.pinning}. Load average before ${meta.loadAverageBefore}, after ` +
    `${meta.loadAverageAfter ?? "-"}.`,
    "",
  ];
  const summary = [
    "### Targets",
    "",
    "| workload | ours ÷ | ratio | target | |",
    "|---|---|---:|---:|---|",
  ];
  for (const w of results) {
    if (w.skipped || w.error) {
      summary.push(`| ${w.title} | | | | ${w.skipped ? `skipped: ${w.skipped}` : `error`} |`);
      continue;
    }
    for (const t of w.targets) {
      const outcome = t.checksFailed ? "FAILED checks" : t.met ? "met" : "MISSED";
      summary.push(`| ${w.title} | ${targetRow(t)} | ${outcome} |`);
    }
    // A peer against the ceiling, for information (e.g. graphql-yoga ÷ raw Deno.serve).
    const ceiling = w.contenders.find((c) => c.role === "ceiling");
    for (const peer of w.contenders.filter((c) => c.role === "peer" && ceiling)) {
      const ratio = median(peer.rounds.map((m, i) => m.rps / (ceiling!.rounds[i]?.rps ?? NaN)));
      summary.push(
        `| ${w.title} | (${peer.name} ÷ ${ceiling!.name}) | ${
          Number.isFinite(ratio) ? ratio.toFixed(2) : "-"
        }× | | information |`,
      );
    }
  }
  const hasTargets = results.some((w) => w.targets.length > 0);
  return [
    ...head,
    ...results.map(workloadTable),
    ...matrixTable(results),
    // The scaling run's summary; the matrix has its own.
    ...(hasTargets ? summary : results.every(isMatrix) ? [] : costTable(results)),
    "",
  ]
    .join("\n");
}

/** The middle cells of a target's summary row: what is compared, the measure, the target. */
function targetRow(t: WorkloadResult["targets"][number]): string {
  const value = (unit: string) =>
    t.ratio === undefined || t.checksFailed
      ? "-"
      : `${t.ratio.toFixed(unit === " MiB" ? 0 : 2)}${unit}`;
  switch (t.measure) {
    case "memory":
      return t.against === undefined
        ? `(peak memory of ours, MiB) | ${value(" MiB")} | ≤ ${t.max} MiB`
        : `${t.against} (peak memory: ours ÷ it) | ${value("×")} | ≤ ${t.max}×`;
    case "misses":
      return `(${t.what}) | ${t.ratio === undefined || t.checksFailed ? "-" : fmt(t.ratio)} | ≤ ${
        fmt(t.max)
      }`;
    case "p99":
      return `${t.against} (p99 latency: ours ÷ it) | ${value("×")} | ≤ ${t.max}×`;
    default:
      return `${t.against} | ${value("×")} | ≥ ${t.min}×`;
  }
}

/** The scaling run's summary: server CPU per request of every row, to read growth at a glance. */
function costTable(results: WorkloadResult[]): string[] {
  const lines = [
    "### Cost by size",
    "",
    "| workload | contender | req/s | server CPU µs/req |",
    "|---|---|---:|---:|",
  ];
  for (const w of results) {
    if (w.skipped || w.error) {
      lines.push(`| ${w.title} | | | ${w.skipped ? `skipped: ${w.skipped}` : "error"} |`);
      continue;
    }
    for (const c of w.contenders) {
      lines.push(`| ${w.title} | ${c.name} | ${fmt(c.rps)} | ${us(c.cpuUsPerRequest)} |`);
    }
  }
  return lines;
}
