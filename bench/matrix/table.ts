// The matrix at a glance: one row per operation, one column per framing, each cell the ratio of
// this server to its ceiling, whether the cell meets issue 34's targets, and this server's CPU
// per operation (the ceiling's in brackets). Built from the workloads of bench/matrix/workloads.ts
// that ran; printed at the end of the report (docs/bench.md, "The operation × framing matrix").
import type { WorkloadResult } from "../runner.ts";
import { FRAMINGS, OPERATION_TITLES, OPERATIONS, slugOf } from "./requests.ts";

/** Workloads whose ids start with this are the matrix's cells. */
export const MATRIX_PREFIX = "matrix-";

const mark = (met: boolean) => (met ? "✓" : "✗");
const times = (n: number | undefined) => (n === undefined ? "-" : `${n.toFixed(2)}×`);
const us = (n: number | undefined) => n === undefined || !Number.isFinite(n) ? "-" : n.toFixed(0);

function cell(w: WorkloadResult | undefined): string {
  if (w === undefined) return "";
  if (w.skipped) return "skipped";
  if (w.error) return "error";
  const ours = w.contenders.find((c) => c.role === "ours");
  const ceiling = w.contenders.find((c) => c.role === "ceiling");
  if (!ours || !ceiling) return "-";
  if (w.contenders.some((c) => c.failures > 0)) return "FAILED checks";
  const parts = [times(ceiling.ratio)];
  for (const t of w.targets) {
    if (t.measure === "p99") parts.push(`p99 ${times(t.ratio)} ${mark(t.met)}`);
    else if (t.measure !== undefined && t.measure !== "rps") continue;
    else if (t.against === ceiling.name) parts[0] += ` ${mark(t.met)}`;
    else parts.push(`REST ${times(t.ratio)} ${mark(t.met)}`);
  }
  return `${parts.join(", ")} · ${us(ours.cpuUsPerRequest)} µs (${us(ceiling.cpuUsPerRequest)})`;
}

/** The matrix table of the cells in `results`; none when no cell ran. */
export function matrixTable(results: readonly WorkloadResult[]): string[] {
  const byId = new Map(
    results.filter((w) => w.id.startsWith(MATRIX_PREFIX)).map((w) => [w.id, w]),
  );
  if (byId.size === 0) return [];
  const lines = [
    "### Operation × framing",
    "",
    "Each cell: ours ÷ its ceiling by req/s (✓/✗: the target of reads, ≥ 0.8×, GraphQL's page " +
    "≥ 0.7×), for reads ours' p99 ÷ the ceiling's (≤ 2×), for writes ours ÷ the same write " +
    "over REST (≥ 0.8×); then ours' server CPU µs per operation (the ceiling's in brackets).",
    "",
    `| operation | ${FRAMINGS.join(" | ")} |`,
    `|---|${FRAMINGS.map(() => "---").join("|")}|`,
  ];
  for (const op of OPERATIONS) {
    const cells = FRAMINGS.map((f) => cell(byId.get(`${MATRIX_PREFIX}${op}-${slugOf(f)}`)));
    if (cells.every((c) => c === "")) continue;
    lines.push(`| ${OPERATION_TITLES[op]} | ${cells.join(" | ")} |`);
  }
  return [...lines, ""];
}
