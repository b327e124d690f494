/**
 * `deno task migrate`: upgrades the KV named by `KV_PATH` to the storage layout of this version,
 * in place, in bounded atomic batches (store/layout/migrate.ts). Resumable: run it again after it was
 * stopped, by anything, and it goes on where the last committed batch ended. Stop servers of
 * the version before layouts were numbered first: they do not check the layout.
 *
 *   KV_PATH=data/kv.sqlite3 deno task migrate
 */
import { CURRENT_LAYOUT } from "../store/layout/layout.ts";
import { migrateKv } from "../store/layout/migrate.ts";
import { fail, failureText, openConfiguredKv, progressPrinter, secondsSince } from "./kv_env.ts";

async function main(): Promise<void> {
  if (Deno.args.length > 0) {
    const help = Deno.args[0] === "--help";
    const usage = "usage: deno task migrate   (KV from KV_PATH)";
    if (help) {
      console.log(usage);
      return;
    }
    fail("migrate", `unexpected argument ${Deno.args[0]}\n${usage}`, 2);
  }
  const started = performance.now();
  const { kv, label } = await openConfiguredKv("migrate");
  const progress = progressPrinter("migrate");
  try {
    const { from } = await migrateKv(kv, label, (e) => {
      if (!e.done) progress(`layout ${e.from} → ${e.to}: ${e.items} records (${e.what})`);
      else console.error(`migrate: layout ${e.from} → ${e.to}: done, ${e.items} records`);
    });
    const what = from === null
      ? `was empty: marked as layout ${CURRENT_LAYOUT}`
      : from === CURRENT_LAYOUT
      ? `is at layout ${CURRENT_LAYOUT} already`
      : `is at layout ${CURRENT_LAYOUT} now (was ${from})`;
    console.error(`migrate: the KV (${label}) ${what}; ${secondsSince(started)} s`);
  } catch (error) {
    fail("migrate", failureText(error));
  } finally {
    kv.close();
  }
}

if (import.meta.main) await main();
