/**
 * `deno task export`: writes every stored address, with its owner, id and the id counter, as
 * NDJSON (store/backup/format.ts) to stdout or `--out FILE`, from the KV named by `KV_PATH`,
 * while servers keep using it. With `--out`, the file appears under its name only when complete.
 *
 *   KV_PATH=data/kv.sqlite3 deno task export --out backup.ndjson
 */
import { parseArgs } from "node:util";
import { exportKv } from "../store/backup/export.ts";
import { fail, failureText, openConfiguredKv, progressPrinter, secondsSince } from "./kv_env.ts";

const USAGE = "usage: deno task export [--out FILE]   (KV from KV_PATH; stdout without --out)";

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      args: Deno.args,
      options: { out: { type: "string" }, help: { type: "boolean", default: false } },
    }));
  } catch (error) {
    fail("export", `${failureText(error)}\n${USAGE}`, 2);
  }
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const started = performance.now();
  const { kv, label } = await openConfiguredKv("export");
  const out = values.out;
  const partial = out === undefined ? undefined : `${out}.partial`;
  const file = partial === undefined
    ? undefined
    : await Deno.open(partial, { write: true, create: true, truncate: true });
  const writer = (file?.writable ?? Deno.stdout.writable).getWriter();
  const encoder = new TextEncoder();
  const progress = progressPrinter("export");
  try {
    const summary = await exportKv(
      kv,
      label,
      (text) => writer.write(encoder.encode(text)),
      (n) => progress(`${n} addresses`),
    );
    await writer.close();
    if (partial !== undefined) await Deno.rename(partial, out!);
    console.error(
      `export: ${summary.addresses} addresses, ${summary.idempotency} idempotency keys, id ` +
        `counter ${summary.counter}, from ${label} to ` +
        `${out ?? "stdout"} in ${secondsSince(started)} s`,
    );
    const { count, ids } = summary.offRules;
    if (count > 0) {
      console.error(
        `export: warning: ${count} address(es) break today's field rules (stored under older ` +
          `ones), ids ${ids.join(", ")}${count > ids.length ? ", …" : ""}: deno task import ` +
          "refuses their lines until they are corrected (docs/operations.md)",
      );
    }
  } catch (error) {
    await writer.abort().catch(() => {});
    if (partial !== undefined) await Deno.remove(partial).catch(() => {});
    fail("export", failureText(error));
  } finally {
    kv.close();
  }
}

if (import.meta.main) await main();
