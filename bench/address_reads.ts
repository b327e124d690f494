import type { Baseline } from "./baseline.ts";
import { type BenchContext, httpContender, type WrkLoad } from "./contenders.ts";
import { httpUrlOf, startOurs } from "./ours.ts";
import { startRawKv } from "./peer_services.ts";
import { type Answer, answer, sameBodies } from "./reference.ts";
import type { Contender, Target, Workload } from "./runner.ts";
import type { Service } from "./service.ts";
import {
  copyKv,
  layoutOfCheckout,
  markSeededLayout,
  seedAddresses,
  SEEDING,
} from "./seed_addresses.ts";

/** The ceiling of the address reads (bench/peers/raw_kv_addresses.ts). */
export const RAW_KV = "raw Deno KV (Deno.serve)";

/** Addresses seeded: as many as one owner may store under the default quota. */
export const SEEDED = 10_000;

/** Issue 28: each read at least 0.8× raw Deno KV doing the same reads. */
const READ_TARGET: Target = { against: RAW_KV, min: 0.8 };
/** Issue 28: pages of 500 under 64 clients in no more memory than raw Deno KV needs there. */
const PAGE_MEMORY_TARGET: Target = { measure: "memory", against: RAW_KV, max: 1 };

/** The seeded KV file and what this server answered on it before the load. */
interface Seeded {
  kvPath: string;
  seconds: number;
  /** By path: the first pages of 500 and of 50, and one address of each id length. */
  answers: Map<string, Answer>;
}

const pagePath = (limit: number) => `/addresses?limit=${limit}`;

/** Ids 1, 10, 100, …: one of each length up to `count`, so one of each body size. */
function idsOfEachLength(count: number): number[] {
  const ids: number[] = [];
  for (let id = 1; id <= count; id *= 10) ids.push(id);
  return ids;
}

/** Seeds SEEDED addresses in a fresh KV file and records this server's answers on a copy. */
async function seedAndLearn(ctx: BenchContext): Promise<Seeded> {
  const dir = await Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-address-reads-" });
  const kvPath = `${dir}/kv.sqlite3`;
  const started = performance.now();
  await seedAddresses(kvPath, SEEDED);
  const seconds = (performance.now() - started) / 1000;
  const place = { root: ctx.root, serverCpus: ctx.tools.serverCpus };
  const probeDir = await Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-address-probe-" });
  await copyKv(kvPath, probeDir);
  const probe = await startOurs(place, {
    kvDir: probeDir,
    name: "ours (reference)",
    defaultQuota: true,
  });
  try {
    const base = httpUrlOf(probe);
    const answers = new Map<string, Answer>();
    const paths = [
      pagePath(500),
      pagePath(50),
      ...idsOfEachLength(SEEDED).map((id) => `/addresses/${id}`),
    ];
    for (const path of paths) answers.set(path, await answer(await fetch(`${base}${path}`), path));
    return { kvPath, seconds, answers };
  } finally {
    await probe.stop();
  }
}

/**
 * Issue 28's read rows: the first page of 500 and of 50 under 64 clients, and one address by id
 * (cycling through every seeded id), of SEEDED addresses seeded once; this server (as `deno task
 * start` runs it, default settings, auth off) against plain Deno.serve reading the same
 * addresses straight from Deno KV, each on its own copy of the seeded file.
 */
export function buildAddressReadWorkloads(ctx: BenchContext, baseline: Baseline): Workload[] {
  const place = { root: ctx.root, serverCpus: ctx.tools.serverCpus };
  // Seeded when the first of these servers starts, not when other workloads are selected.
  let seeding: Promise<Seeded> | undefined;
  const seeded = () => seeding ??= seedAndLearn(ctx);
  const copy = async (prefix: string) => {
    const dir = await Deno.makeTempDir({ dir: ctx.tmp, prefix });
    await copyKv((await seeded()).kvPath, dir);
    return dir;
  };
  const notes = [
    `${SEEDED.toLocaleString("en-US")} addresses seeded once through ${SEEDING}; each server ` +
    "reads its own copy of that KV file",
  ];

  const workload = (spec: {
    id: string;
    title: string;
    path: string;
    connections: number;
    /** The answers a server's bodies must equal, and the load's body sizes from them. */
    checked: (s: Seeded) => Map<string, Answer>;
    pathsFile?: () => Promise<string>;
    targets: Target[];
    load: string;
    checks: string;
    /** Headers the raw peer must send with ours' value. */
    sameHeaders?: string[];
  }): Workload => {
    const verify = (sameHeaders: string[]) => async (service: unknown, url: string) => {
      const answers = spec.checked(await seeded());
      await sameBodies(answers, [], sameHeaders)(service, url);
      return {
        lengths: [...new Set([...answers.values()].map((a) => a.body.byteLength))],
        ...(spec.pathsFile ? { pathsFile: await spec.pathsFile() } : {}),
      };
    };
    const load: WrkLoad = { status: 200, lengths: [] };
    const http = (
      name: string,
      role: Contender["role"],
      start: () => Promise<Service>,
      sameHeaders: string[] = [],
    ) =>
      httpContender({
        ctx,
        name,
        role,
        start,
        path: spec.path,
        load,
        verify: verify(sameHeaders),
        connections: spec.connections,
      });
    return {
      id: spec.id,
      title: spec.title,
      load: `wrk, ${spec.connections} connections, HTTP/1.1 keep-alive; ${spec.load}`,
      checks: spec.checks,
      contenders: [
        http(
          "ours",
          "ours",
          async () => startOurs(place, { kvDir: await copy("kv-reads-"), defaultQuota: true }),
        ),
        http(
          RAW_KV,
          "ceiling",
          async () => startRawKv(place, `${await copy("kv-raw-")}/kv.sqlite3`, RAW_KV),
          spec.sameHeaders,
        ),
        ...baseline.http(spec.path, load, verify([]), {
          kvDir: async () => {
            const dir = await copy("kv-base-reads-");
            await markSeededLayout(
              `${dir}/kv.sqlite3`,
              await layoutOfCheckout(baseline.place!.root),
            );
            return dir;
          },
          connections: spec.connections,
          defaultQuota: true,
        }),
      ],
      targets: spec.targets,
      notes: [...notes, ...baseline.notes],
    };
  };

  const pageChecks = "every response: status 200 and the exact body size of that page (wrk Lua " +
    "hook); the page checked byte for byte against ours' before the load";
  const page = (limit: number, targets: Target[], extra: string[] = []) => {
    const w = workload({
      id: `address-page-${limit}`,
      title: `GET /addresses?limit=${limit}, ${ctx.opts.connections} clients`,
      path: pagePath(limit),
      connections: ctx.opts.connections,
      checked: (s) => new Map([[pagePath(limit), s.answers.get(pagePath(limit))!]]),
      targets,
      load: `the first page of ${limit} of ${SEEDED.toLocaleString("en-US")} addresses`,
      checks: pageChecks,
    });
    w.notes = [...extra, ...w.notes ?? []];
    return w;
  };

  const byIdConnections = Math.max(1, Math.round(ctx.opts.connections / 2));
  const byId = workload({
    id: "address-by-id",
    title: `GET /addresses/{id}, ${byIdConnections} clients`,
    path: "/addresses/1",
    connections: byIdConnections,
    checked: (s) =>
      new Map(
        idsOfEachLength(SEEDED).map((
          id,
        ) => [`/addresses/${id}`, s.answers.get(`/addresses/${id}`)!]),
      ),
    pathsFile: async () => {
      const file = `${ctx.tmp}/address_paths.txt`;
      const ids = Array.from({ length: SEEDED }, (_, i) => `/addresses/${i + 1}`);
      await Deno.writeTextFile(file, ids.join("\n") + "\n");
      return file;
    },
    targets: [READ_TARGET],
    load: `cycling through all ${SEEDED.toLocaleString("en-US")} ids`,
    checks: "every response: status 200 and a body size one of the addresses has (wrk Lua " +
      "hook); one address of each id length checked byte for byte against ours' before the " +
      "load, and the raw peer's ETag equal to ours (the same stored ETag)",
    sameHeaders: ["etag"],
  });

  return [
    page(500, [READ_TARGET, PAGE_MEMORY_TARGET], [
      "issue 28's moonshot for peak memory here: ≤ 160 MiB",
    ]),
    page(50, [READ_TARGET]),
    byId,
  ];
}
