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
type HttpOptions = { kvDir?: () => Promise<string>; connections?: number; defaultQuota?: boolean };

/**
 * BENCH_BASELINE: another checkout of this server, started as ours is (its own `main.ts` and
 * `deno.json` flags), as one more contender of each workload; `ours ÷ it` is then the gain of
 * the change. Each `*` method gives no contender when no baseline is set.
 */
export interface Baseline {
  /** Said with every workload's table: which checkout, at which commit. */
  notes: string[];
  /** Where the checkout is, for workloads that start it their own way; undefined without one. */
  place: Place | undefined;
  /**
   * An HTTP contender; `kvDir` gives the directory of its KV file (default: a fresh, empty one),
   * e.g. one holding a copy of seeded data.
   */
  http(path: string, load: WrkLoad, verify: HttpVerify, options?: HttpOptions): Contender[];
  grpc(spec: GrpcSpec): Contender[];
  addresses(spec: PostSpec): Contender[];
}

export async function baselineOf(
  ctx: BenchContext,
  serverCpus: string | undefined,
  restartMarker: string,
): Promise<Baseline> {
  const root = ctx.opts.baseline;
  if (root === undefined) {
    return { notes: [], place: undefined, http: () => [], grpc: () => [], addresses: () => [] };
  }
  const place: Place = { root, serverCpus };
  const freshKv = () => Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-base-" });
  const start = async (kvDir = freshKv, defaultQuota = false) =>
    startOurs(place, {
      kvDir: await kvDir(),
      name: BASELINE,
      markers: [restartMarker],
      defaultQuota,
    });
  return {
    notes: [`${BASELINE}: ${root} at ${await commitOf(root)}, run as ours is`],
    place,
    http: (path, load, verify, options = {}) => [
      httpContender({
        ctx,
        name: BASELINE,
        role: "peer",
        start: () => start(options.kvDir, options.defaultQuota),
        path,
        load,
        verify,
        countLog: true,
        ...(options.connections ? { connections: options.connections } : {}),
      }),
    ],
    grpc: (spec) => [
      grpcContender({ ...spec, name: BASELINE, role: "peer", start: () => start(), restartMarker }),
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
