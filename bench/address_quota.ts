import { ADDRESS_INPUT, listedIds } from "./addresses_contenders.ts";
import { BASELINE, type Baseline } from "./baseline.ts";
import type { BenchContext } from "./contenders.ts";
import { httpUrlOf, type Place, startOurs } from "./ours.ts";
import { memoryOf } from "./proc.ts";
import type { Contender, Measurement, Workload } from "./runner.ts";
import type { Service } from "./service.ts";
import { latencySummary } from "./stats.ts";

/** Creations of the check: more than one owner's default quota, as a new user's import would. */
export const CREATES = 20_000;

/** The error code of an error body (`{"errors":[{"error": code, …}]}`), or "". */
function errorCode(text: string): string {
  try {
    return String(JSON.parse(text)?.errors?.[0]?.error ?? "");
  } catch {
    return "";
  }
}

/**
 * CREATES × `POST /addresses` by one client, one at a time, against a fresh server with the
 * default settings (auth off: one owner). An answer other than 201 is a miss of the target, not
 * a failed check, unless it is a 5xx or no answer at all; afterwards every id answered 201 must
 * be listed, once each, and nothing else.
 */
function createsContender(
  ctx: BenchContext,
  spec: { name: string; role: Contender["role"]; place: Place },
): Contender {
  let server: Service | undefined;
  return {
    name: spec.name,
    role: spec.role,
    once: true,
    async prepare() {},
    async measure(): Promise<Measurement> {
      const dir = await Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-creates-" });
      server = await startOurs(spec.place, { kvDir: dir, name: spec.name, defaultQuota: true });
      const url = `${httpUrlOf(server)}/addresses`;
      const body = JSON.stringify(ADDRESS_INPUT);
      const latencies: number[] = [];
      const ids: number[] = [];
      const refused = new Map<string, number>();
      let firstMiss = "";
      let failures = 0;
      let firstFailure = "";
      const fail = (what: string, n = 1) => {
        failures += n;
        firstFailure ||= what;
      };
      const cpu = await server.cpuSeconds();
      const started = performance.now();
      for (let i = 1; i <= CREATES; i++) {
        const sent = performance.now();
        let status: number;
        let text: string;
        try {
          const response = await fetch(url, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
          });
          status = response.status;
          text = await response.text();
        } catch (error) {
          // The server is gone or stuck: the rest would fail alike.
          fail(`creation ${i}: ${error}`, CREATES - i + 1);
          break;
        }
        latencies.push(performance.now() - sent);
        if (status === 201) {
          ids.push(JSON.parse(text).id);
          continue;
        }
        const what = `${status} ${errorCode(text)}`.trim();
        refused.set(what, (refused.get(what) ?? 0) + 1);
        firstMiss ||= `the first miss at creation ${i.toLocaleString("en-US")}`;
        if (status >= 500) fail(`creation ${i}: ${what}`);
      }
      const seconds = (performance.now() - started) / 1000;
      const cpuUsPerRequest = (await server.cpuSeconds() - cpu) * 1e6 / latencies.length;
      const memory = memoryOf(await server.peakMemory());
      if (server.alive()) {
        const stored = await listedIds(httpUrlOf(server));
        const duplicates = ids.length - new Set(ids).size;
        const missing = ids.filter((id) => !stored.has(id)).length;
        const extra = stored.size - (ids.length - duplicates - missing);
        if (duplicates > 0) fail(`${duplicates} ids answered twice`, duplicates);
        if (missing > 0) fail(`${missing} ids answered 201 not listed`, missing);
        if (extra > 0) fail(`${extra} addresses listed that no 201 answered`, extra);
      } else fail(`the server exited: ${server.diagnosis()}`);
      await server.stop();
      server = undefined;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      const misses = CREATES - ids.length;
      const summary = [`${ids.length.toLocaleString("en-US")} × 201`];
      for (const [what, n] of refused) summary.push(`${n.toLocaleString("en-US")} × ${what}`);
      return {
        ...latencySummary(latencies, seconds),
        failures,
        firstFailure,
        cpuUsPerRequest,
        misses,
        ...memory,
        notes: [
          `${CREATES.toLocaleString("en-US")} creations in ${seconds.toFixed(1)} s: ` +
          `${summary.join(", ")}${firstMiss ? ` (${firstMiss})` : ""}`,
        ],
      };
    },
    async finish() {
      await server?.stop("SIGKILL");
      return { peakRssMiB: NaN };
    },
  };
}

/** Issue 28: CREATES creations by one caller with the defaults and auth off, all 201. */
export function buildCreatesWorkload(ctx: BenchContext, baseline: Baseline): Workload {
  const place = { root: ctx.root, serverCpus: ctx.tools.serverCpus };
  const what = `answers of ${CREATES.toLocaleString("en-US")} creations not 201`;
  return {
    id: "address-creates-20k",
    title: `${CREATES.toLocaleString("en-US")} creations by one caller, default settings`,
    load: "one client (the bench's fetch, keep-alive), one POST /addresses at a time, auth off, " +
      "MAX_ADDRESSES_PER_OWNER unset; a fresh KV file; once",
    checks: "every answer is 201 with an id or a 4xx (a miss of the target, counted by status " +
      "and error code); a 5xx or no answer is a failed check; afterwards every id answered 201 " +
      "is listed by GET /addresses, once, and nothing else is",
    contenders: [
      createsContender(ctx, { name: "ours", role: "ours", place }),
      ...(baseline.place
        ? [createsContender(ctx, { name: BASELINE, role: "peer", place: baseline.place })]
        : []),
    ],
    targets: [{ measure: "misses", max: 0, what }],
    notes: baseline.notes,
    showNotes: true,
  };
}
