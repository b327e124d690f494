// GraphQL's page of 50 addresses (the typed `Addresses` document, `first: 50`) against its
// ceiling, side by side (issue 34): this checkout's server, optionally another checkout's
// (BENCH_BASELINE, the "before"), and a raw Deno.serve doing one `kv.list` of 50
// (bench/peers/raw_kv_graphql.ts), each on its own copy of the same 20,000 seeded addresses,
// pinned to CPU 1 with wrk on CPU 0, one after the other in each round. Reported per server:
// requests/s, CPU µs per request (the server's process tree, user + system from /proc), p99.
//
//   BENCH_BASELINE=<checkout> BENCH_DURATION=8 BENCH_ROUNDS=3 deno run -A bench/graphql_page.ts
import { print } from "graphql";
import { AddressesDocument } from "../clients/gen/graphql.ts";
import { readOptions } from "./options.ts";
import { httpUrlOf, startOurs } from "./ours.ts";
import { copyKv, seedAddresses } from "./seed_addresses.ts";
import { type Service, startService } from "./service.ts";
import { runWrk } from "./wrk.ts";

const SERVER_CPUS = "1";
const LOAD_CPUS = "0";
const SEEDED = 20_000;

const options = readOptions(Deno.env.toObject());
const seconds = Number(Deno.env.get("BENCH_DURATION") ?? 8);
const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const tmp = await Deno.makeTempDir({ prefix: "graphql-page-" });
const seeded = `${tmp}/seed.sqlite3`;
await seedAddresses(seeded, SEEDED);
const bodyFile = `${tmp}/body.json`;
await Deno.writeTextFile(
  bodyFile,
  JSON.stringify({ query: print(AddressesDocument), variables: { first: 50 } }),
);

type Start = (kvDir: string) => Promise<Service>;
const servers: [string, Start][] = [];
if (options.baseline) {
  const baseline = options.baseline;
  servers.push([
    "before",
    (kvDir) => startOurs({ root: baseline, serverCpus: SERVER_CPUS }, { kvDir, name: "before" }),
  ]);
}
servers.push([
  "after",
  (kvDir) => startOurs({ root, serverCpus: SERVER_CPUS }, { kvDir, name: "after" }),
]);
servers.push(["ceiling", (kvDir) =>
  startService({
    name: "ceiling",
    command: [Deno.execPath(), "run", "-A", `${root}/bench/peers/raw_kv_graphql.ts`],
    env: { KV_PATH: `${kvDir}/kv.sqlite3` },
    cpus: SERVER_CPUS,
  })]);

const results = new Map<string, { rps: number[]; cpu: number[]; p99: number[] }>();
for (let round = 1; round <= options.rounds; round++) {
  for (const [name, start] of servers) {
    const kvDir = await Deno.makeTempDir({ dir: tmp });
    await copyKv(seeded, kvDir);
    const service = await start(kvDir);
    try {
      const url = `${httpUrlOf(service)}/graphql`;
      const sample = await fetch(url, {
        method: "POST",
        body: await Deno.readFile(bodyFile),
        headers: { "content-type": "application/json" },
      });
      const text = await sample.text();
      if (sample.status !== 200 || !text.includes('"hasNextPage":true')) {
        throw new Error(`${name} answered ${sample.status}: ${text.slice(0, 300)}`);
      }
      const run = {
        url,
        connections: options.connections,
        cpus: LOAD_CPUS,
        status: 200,
        lengths: [new TextEncoder().encode(text).length],
        method: "POST" as const,
        bodyFile,
      };
      await runWrk({ ...run, seconds: options.warmup });
      const before = await service.cpuSeconds();
      const result = await runWrk({ ...run, seconds });
      const cpu = (await service.cpuSeconds()) - before;
      if (result.failures > 0) throw new Error(`${name}: ${result.firstFailure}`);
      const r = results.get(name) ?? { rps: [], cpu: [], p99: [] };
      r.rps.push(result.rps);
      r.cpu.push(cpu * 1e6 / result.requests);
      r.p99.push(result.p99Ms);
      results.set(name, r);
      console.log(
        `round ${round} ${name}: ${result.rps.toFixed(0)} req/s, ` +
          `${(cpu * 1e6 / result.requests).toFixed(0)} µs CPU/request, p99 ${
            result.p99Ms.toFixed(1)
          } ms`,
      );
    } finally {
      await service.stop();
      await Deno.remove(kvDir, { recursive: true });
    }
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ceiling = results.get("ceiling")!;
console.log("\n| server | req/s | CPU µs/request | p99 ms | ratio by CPU | ratio by rate |");
console.log("| --- | --- | --- | --- | --- | --- |");
for (const [name, r] of results) {
  console.log(
    `| ${name} | ${median(r.rps).toFixed(0)} | ${median(r.cpu).toFixed(0)} | ` +
      `${median(r.p99).toFixed(1)} | ${(median(ceiling.cpu) / median(r.cpu)).toFixed(2)} | ` +
      `${(median(r.rps) / median(ceiling.rps)).toFixed(2)} |`,
  );
}
await Deno.remove(tmp, { recursive: true });
