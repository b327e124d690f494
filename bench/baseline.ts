import { postAddressesContender } from "./addresses_contenders.ts";
import { type BenchContext, httpContender, type WrkLoad } from "./contenders.ts";
import { grpcContender } from "./grpc_contenders.ts";
import { type Place, startOurs } from "./ours.ts";
import type { Contender } from "./runner.ts";

/** The contender of BENCH_BASELINE: this project at another commit. */
export const BASELINE = "ours, before";

type HttpVerify = NonNullable<Parameters<typeof httpContender>[0]["verify"]>;
type GrpcSpec = Omit<Parameters<typeof grpcContender>[0], "name" | "role" | "start">;
type PostSpec = Omit<Parameters<typeof postAddressesContender>[1], "name" | "role">;

/**
 * BENCH_BASELINE: another checkout of this server, started as ours is (its own `main.ts` and
 * `deno.json` flags), as one more contender of each workload; `ours ÷ it` is then the gain of
 * the change. Each `*` method gives no contender when no baseline is set.
 */
export interface Baseline {
  /** Said with every workload's table: which checkout, at which commit. */
  notes: string[];
  http(path: string, load: WrkLoad, verify: HttpVerify): Contender[];
  grpc(spec: GrpcSpec): Contender[];
  addresses(spec: PostSpec): Contender[];
}

export async function baselineOf(
  ctx: BenchContext,
  serverCpus: string | undefined,
  restartMarker: string,
): Promise<Baseline> {
  const root = ctx.opts.baseline;
  if (root === undefined) return { notes: [], http: () => [], grpc: () => [], addresses: () => [] };
  const place: Place = { root, serverCpus };
  const start = async () =>
    startOurs(place, {
      kvDir: await Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-base-" }),
      name: BASELINE,
      markers: [restartMarker],
    });
  return {
    notes: [`${BASELINE}: ${root} at ${await commitOf(root)}, run as ours is`],
    http: (path, load, verify) => [
      httpContender({
        ctx,
        name: BASELINE,
        role: "peer",
        start,
        path,
        load,
        verify,
        countLog: true,
      }),
    ],
    grpc: (spec) => [
      grpcContender({ ...spec, name: BASELINE, role: "peer", start, restartMarker }),
    ],
    addresses: (spec) => [
      postAddressesContender(ctx, {
        ...spec,
        name: BASELINE,
        role: "peer",
        start: (kvDir) => startOurs(place, { kvDir, name: BASELINE }),
        restart: (kvDir) => startOurs(place, { kvDir, name: `${BASELINE} (restarted)` }),
      }),
    ],
  };
}

/** The short commit a checkout is at, or "an unknown commit". */
async function commitOf(root: string): Promise<string> {
  try {
    const out = await new Deno.Command("git", {
      args: ["-C", root, "rev-parse", "--short", "HEAD"],
      stdout: "piped",
      stderr: "null",
    }).output();
    const commit = new TextDecoder().decode(out.stdout).trim();
    return out.success && commit ? commit : "an unknown commit";
  } catch {
    return "an unknown commit";
  }
}
