// Stores addresses for the read workloads through the project's own address store, in-process:
// the group commit POST /addresses uses, without HTTP, so seeding takes seconds. Run as a script
// (`KV_PATH=… COUNT=… deno run --allow-all bench/seed_addresses.ts`) it seeds in its own process
// and prints one JSON line with its time, CPU and peak memory, for the 1M-address scaling row.
import { ADDRESS_INPUT } from "./addresses_contenders.ts";
import { cpuSeconds } from "./proc.ts";
import { openAddressStore } from "../store/addresses/repository.ts";
import { openLayout } from "../store/layout/migrate.ts";
import { pageTokens } from "../store/addresses/page_tokens.ts";

/** Creations in flight while seeding; the store commits them in batches of `SEED_BATCH`. */
const IN_FLIGHT = 5_000;
const SEED_BATCH = 500;

/** How seeding is done, said with the rows that use it. */
export const SEEDING = `the project's address store in-process (store.create, the group ` +
  `commit of POST /addresses without HTTP: ${IN_FLIGHT.toLocaleString("en-US")} in flight, ` +
  `batches of ${SEED_BATCH}), all for the owner of auth off ("")`;

/**
 * Stores `count` copies of ADDRESS_INPUT (ids 1 to `count`) for the owner "" in a fresh KV, with
 * its page token key: every copy of the file then seals page tokens with the same key, so a
 * ceiling on one copy answers the same tokens as a server on another.
 */
export async function seedAddresses(kvPath: string, count: number): Promise<void> {
  const kv = await Deno.openKv(kvPath);
  try {
    // Marks the fresh KV with the current layout first, as a server would; one owner holds them
    // all, past any quota (the servers started on it only read).
    const guard = await openLayout(kv, kvPath, { migrateOnStart: false });
    const store = openAddressStore(kv, { maxBatch: SEED_BATCH, maxPerOwner: Infinity, guard });
    await pageTokens(kv).ready();
    for (let done = 0; done < count; done += IN_FLIGHT) {
      const n = Math.min(IN_FLIGHT, count - done);
      await Promise.all(Array.from({ length: n }, () => store.create("", ADDRESS_INPUT)));
    }
  } finally {
    kv.close();
  }
}

/**
 * Copies a closed KV file (and a WAL beside it, if any) into `dir` as `kv.sqlite3`, the name
 * startOurs uses, so each server process reads its own copy of the same data. The copy is flushed
 * to disk before it is used: else the first commit of the server on it would wait for the whole
 * copy to be written out (its fsync flushes the file), seconds on a busy disk, inside a measured
 * round.
 */
export async function copyKv(kvPath: string, dir: string): Promise<string> {
  const target = `${dir}/kv.sqlite3`;
  await Deno.copyFile(kvPath, target);
  for (const suffix of ["-wal", "-shm"]) {
    await Deno.copyFile(kvPath + suffix, target + suffix).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
  }
  for (const suffix of ["", "-wal"]) {
    const file = await Deno.open(target + suffix, { read: true, write: true }).catch(() => null);
    if (file === null) continue;
    try {
      await file.sync();
    } finally {
      file.close();
    }
  }
  return target;
}

/**
 * The storage layout the checkout at `root` runs on (its `CURRENT_LAYOUT`), read from its source.
 */
export async function layoutOfCheckout(root: string): Promise<number> {
  const text = await Deno.readTextFile(`${root}/store/layout/layout.ts`);
  const version = Number(/export const CURRENT_LAYOUT = (\d+);/.exec(text)?.[1]);
  if (!Number.isSafeInteger(version)) throw new Error(`${root}: no CURRENT_LAYOUT found`);
  return version;
}

/**
 * Marks a copy of the seeded KV as `version` for a checkout of an earlier layout (the baseline),
 * which refuses a newer one. Only for seeded data that both layouts read alike: layout 3 differs
 * from layout 2 by promising no address above the id counter, and seeding puts none there.
 */
export async function markSeededLayout(kvPath: string, version: number): Promise<void> {
  const kv = await Deno.openKv(kvPath);
  try {
    const current = (await kv.get<{ version: number }>(["meta", "layout"])).value?.version;
    if (current !== undefined && current > version && current <= 3 && version >= 2) {
      await kv.set(["meta", "layout"], { version });
    }
  } finally {
    kv.close();
  }
}

if (import.meta.main) {
  const kvPath = Deno.env.get("KV_PATH");
  const count = Number(Deno.env.get("COUNT"));
  if (!kvPath || !Number.isSafeInteger(count) || count < 1) {
    console.error("KV_PATH and COUNT (a positive integer) are required");
    Deno.exit(2);
  }
  const cpu = await cpuSeconds("self");
  const started = performance.now();
  await seedAddresses(kvPath, count);
  const seconds = (performance.now() - started) / 1000;
  const status = await Deno.readTextFile("/proc/self/status").catch(() => "");
  const hwm = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
  console.log(JSON.stringify({
    count,
    seconds,
    cpuSeconds: await cpuSeconds("self") - cpu,
    peakRssMiB: hwm ? Number(hwm) / 1024 : NaN,
    fileMiB: (await Deno.stat(kvPath)).size / 2 ** 20,
  }));
}
