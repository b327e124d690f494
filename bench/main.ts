// `deno task bench`: starts this server and its peers on this machine, loads each with the same
// work, checks every response, and prints ratios measured in the same run. `--scale` runs the
// scaling workloads instead (`deno task bench:scale`). See docs/bench.md. It runs with
// --allow-all: it spawns servers and load generators anyway, and Deno grants /proc (CPU time,
// peak RSS of the servers) to nothing less.
import type { BenchContext } from "./contenders.ts";
import { readOptions, selects, unmatched } from "./options.ts";
import { learnReference } from "./reference.ts";
import { describeRun, fullReport, loadAverage, workloadTable } from "./report.ts";
import { runWorkload, type Workload, type WorkloadResult } from "./runner.ts";
import { buildScaleWorkloads } from "./scale.ts";
import { detectTools, missingTools, pinSelf } from "./tools.ts";
import { buildWorkloads } from "./workloads.ts";
import { feedBench } from "./feed.ts";

const FEED = "feed";

const ROOT = new URL("../", import.meta.url).pathname.replace(/\/$/, "");
const RESULTS = `${ROOT}/bench/results`;

function log(line: string) {
  console.error(line);
}

async function main(): Promise<number> {
  const scale = Deno.args.includes("--scale");
  const opts = readOptions(Deno.env.toObject(), scale);
  const tools = await detectTools();
  const missing = missingTools(tools);
  if (missing.length > 0) {
    log(`missing tools:\n${missing.map((m) => `  - ${m}`).join("\n")}`);
    log("install them with `bench/setup.sh` (Debian/Ubuntu, runs apt-get; needs root or sudo)");
    if (!tools.wrk) return 2;
  }
  if (tools.node) {
    try {
      await Deno.stat(`${ROOT}/node_modules/@grpc/grpc-js/package.json`);
    } catch {
      log("node_modules/@grpc/grpc-js is missing: run `deno install` in the project first");
      return 2;
    }
  }
  if (opts.baseline) {
    try {
      await Deno.stat(`${opts.baseline}/main.ts`);
      await Deno.stat(`${opts.baseline}/node_modules`);
    } catch {
      log(
        `BENCH_BASELINE=${opts.baseline}: no main.ts or node_modules (run \`deno install\` there)`,
      );
      return 2;
    }
  }
  await pinSelf(tools.clientCpus);
  const tmp = await Deno.makeTempDir({ prefix: "books-bench-" });
  const ctx: BenchContext = { root: ROOT, tmp, opts, tools };
  try {
    const meta = await describeRun(tools, opts);
    log(`bench: ${meta.cpu}, ${meta.cores} cores, Deno ${meta.deno}; ${meta.pinning}`);
    log(`load average ${meta.loadAverageBefore}`);
    const place = { root: ROOT, serverCpus: tools.serverCpus };
    let workloads: Workload[];
    if (scale) workloads = await buildScaleWorkloads(ctx);
    else {
      const booksFile = `${ROOT}/store/books.json`;
      const ref = await learnReference(place, { kvDir: await Deno.makeTempDir({ dir: tmp }) });
      workloads = await buildWorkloads(ctx, ref, booksFile);
    }
    // Live updates are measured apart (bench/feed.ts): streams, not requests.
    const ids = [...workloads.map((w) => w.id), ...(scale ? [] : [FEED])];
    const unknown = unmatched(opts.only, ids);
    if (unknown.length > 0) {
      log(`BENCH_ONLY: no workload ${unknown.join(", ")}; ids: ${ids}`);
      return 2;
    }
    workloads = workloads.filter((w) => selects(opts.only, w.id, w.optIn));
    const results: WorkloadResult[] = [];
    for (const w of workloads) {
      log(`${w.title}${w.skipped ? ` (skipped: ${w.skipped})` : ""}`);
      const result = await runWorkload(w, opts.rounds, log);
      results.push(result);
      log(workloadTable(result));
    }
    let feed = "";
    if (!scale && selects(opts.only, FEED)) {
      log("live updates: delivery latency and memory per idle stream");
      feed = `\n\n## Live updates (bench/feed.ts)\n\n${(await feedBench()).join("\n")}\n`;
      log(feed);
    }
    meta.loadAverageAfter = await loadAverage();
    const report = fullReport(meta, results) + feed;
    console.log(report);
    const name = scale ? "scale" : "latest";
    await Deno.mkdir(RESULTS, { recursive: true });
    await Deno.writeTextFile(`${RESULTS}/${name}.json`, JSON.stringify({ meta, results }, null, 2));
    await Deno.writeTextFile(`${RESULTS}/${name}.md`, report);
    log(`written: bench/results/${name}.json and bench/results/${name}.md`);
    const failed = results.some((r) => r.error || r.contenders.some((c) => c.failures > 0));
    if (failed) log("some checks FAILED: the numbers above are not valid");
    return failed ? 1 : 0;
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
}

Deno.exit(await main());
