/**
 * `deno task import`: reads a file written by `deno task export` (`--in FILE`, or stdin) into
 * the KV named by `KV_PATH`: ids preserved, the id counter raised so no id is handed out twice,
 * idempotent and resumable (store/backup/import.ts). A bad line, or an address whose id the
 * target holds with other contents, refuses the file before anything is written, unless
 * `--on-conflict=skip` (keep the target's, import the rest).
 *
 *   KV_PATH=data/new.sqlite3 deno task import --in backup.ndjson
 */
import { parseArgs } from "node:util";
import { importKv, type OnConflict } from "../store/backup/import.ts";
import { fail, failureText, openConfiguredKv, progressPrinter, secondsSince } from "./kv_env.ts";

const USAGE = "usage: deno task import [--in FILE] [--on-conflict=fail|skip]   " +
  "(KV from KV_PATH; stdin without --in)";

/** Stdin is read twice (check, then write): it is kept in a temporary file. */
async function spoolStdin(): Promise<string> {
  const path = await Deno.makeTempFile({ prefix: "import-", suffix: ".ndjson" });
  const file = await Deno.open(path, { write: true, truncate: true });
  await Deno.stdin.readable.pipeTo(file.writable);
  return path;
}

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      args: Deno.args,
      options: {
        in: { type: "string" },
        "on-conflict": { type: "string", default: "fail" },
        help: { type: "boolean", default: false },
      },
    }));
  } catch (error) {
    fail("import", `${failureText(error)}\n${USAGE}`, 2);
  }
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const onConflict = values["on-conflict"];
  if (onConflict !== "fail" && onConflict !== "skip") {
    fail("import", `invalid --on-conflict=${onConflict}: must be fail or skip\n${USAGE}`, 2);
  }
  const started = performance.now();
  const spooled = values.in === undefined ? await spoolStdin() : undefined;
  const path = values.in ?? spooled!;
  const { kv, label } = await openConfiguredKv("import");
  const progress = progressPrinter("import");
  try {
    const summary = await importKv(kv, label, async () => (await Deno.open(path)).readable, {
      onConflict: onConflict as OnConflict,
      onProgress: (p) =>
        progress(
          p.phase === "check"
            ? `checked ${p.addresses} addresses`
            : `wrote ${p.addresses} of ${p.total} addresses`,
        ),
    });
    console.error(
      `import: ${summary.addresses} addresses from ${summary.header.source} (exported ` +
        `${summary.header.exportedAt}) into ${label}: ${summary.written} written, ` +
        `${summary.present} already there, ${summary.skipped} skipped as conflicting; ` +
        `idempotency keys: ${summary.idempotency.written} written, ` +
        `${summary.idempotency.expired} expired, ${summary.idempotency.kept} kept as the ` +
        `target has them; id counter at least ${summary.counter}; ${secondsSince(started)} s`,
    );
  } catch (error) {
    fail("import", failureText(error));
  } finally {
    kv.close();
    if (spooled !== undefined) await Deno.remove(spooled).catch(() => {});
  }
}

if (import.meta.main) await main();
