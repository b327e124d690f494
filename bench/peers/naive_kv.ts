// The naive way to create addresses on Deno KV, with no HTTP: WORKERS concurrent loops, each
// reading the counter and committing check(counter) + set counter + set address, retrying at
// once on conflict. Runs WARMUP seconds, then SECONDS measured, on a fresh KV_PATH; checks
// afterwards that every creation is stored under its own id. Prints one JSON line.

const kvPath = Deno.env.get("KV_PATH")!;
const workers = Number(Deno.env.get("WORKERS") ?? "64");
const warmup = Number(Deno.env.get("WARMUP") ?? "1");
const seconds = Number(Deno.env.get("SECONDS") ?? "10");
const COUNTER = ["counters", "addresses"];
const input = { name: "Ada Lovelace", city: "London", postalCode: "NW1 2DB" };

/** CPU seconds (user + system, all threads) of this process. */
async function cpuSeconds(): Promise<number> {
  const stat = await Deno.readTextFile("/proc/self/stat").catch(() => "");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const kv = await Deno.openKv(kvPath);
let measuring = false;
let stopped = false;
let created = 0;
let measured = 0;
let conflicts = 0;
const latencies: number[] = [];

async function createOne(): Promise<void> {
  for (;;) {
    const counter = await kv.get<Deno.KvU64>(COUNTER);
    const id = (counter.value?.value ?? 0n) + 1n;
    const result = await kv.atomic()
      .check(counter)
      .set(COUNTER, new Deno.KvU64(id))
      .set(["addresses", id], { id: Number(id), ...input })
      .commit();
    if (result.ok) return;
    conflicts++;
  }
}

async function worker(): Promise<void> {
  while (!stopped) {
    const started = performance.now();
    await createOne();
    created++;
    if (measuring) {
      measured++;
      latencies.push(performance.now() - started);
    }
  }
}

const loops = Array.from({ length: workers }, worker);
await new Promise((r) => setTimeout(r, warmup * 1000));
measuring = true;
conflicts = 0;
const cpuBefore = await cpuSeconds();
const started = performance.now();
await new Promise((r) => setTimeout(r, seconds * 1000));
measuring = false;
const elapsed = (performance.now() - started) / 1000;
const cpuUsPerCreation = (await cpuSeconds() - cpuBefore) * 1e6 / measured;
stopped = true;
await Promise.all(loops);

let stored = 0;
for await (const _ of kv.list({ prefix: ["addresses"] })) stored++;
const counter = (await kv.get<Deno.KvU64>(COUNTER)).value?.value ?? 0n;
kv.close();
latencies.sort((a, b) => a - b);
const at = (p: number) => latencies[Math.max(0, Math.ceil(p / 100 * latencies.length) - 1)] ?? NaN;
const status = await Deno.readTextFile("/proc/self/status").catch(() => "");
const hwm = /^VmHWM:\s+(\d+) kB/m.exec(status);
console.log(JSON.stringify({
  workers,
  requests: measured,
  seconds: elapsed,
  rps: measured / elapsed,
  p50Ms: at(50),
  p99Ms: at(99),
  conflicts,
  created,
  stored,
  counter: Number(counter),
  peakRssMiB: hwm ? Number(hwm[1]) / 1024 : NaN,
  cpuUsPerCreation,
}));
