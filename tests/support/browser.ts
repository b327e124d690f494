/**
 * What the browser tests share without loading playwright-core: whether Chromium is there, and
 * running a page check (tests/support/*_check.ts) as its own process, since playwright-core
 * probes /proc at import, which Deno allows only with --allow-all (the test task grants less).
 */
import assert from "node:assert/strict";

/** Debian's package; no browser is downloaded. */
export const CHROMIUM = "/usr/bin/chromium";

/** Whether Chromium is installed; when not, says that `test` is skipped and how to install it. */
export async function hasChromium(test: string): Promise<boolean> {
  const present = await Deno.stat(CHROMIUM).then(() => true, () => false);
  if (!present) {
    console.warn(`${test}: skipped, ${CHROMIUM} is absent (apt-get install -y chromium)`);
  }
  return present;
}

/** Runs the check `script` (a path) against the server at `base`; its JSON report. */
export async function runPageCheck<T>(script: string, base: string): Promise<T> {
  const run = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", script, base],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(run.code, 0, new TextDecoder().decode(run.stderr));
  return JSON.parse(new TextDecoder().decode(run.stdout));
}

/** The body of a check script run as a program: its report for the base URL it is given. */
export async function printReport(
  script: string,
  check: (base: string) => Promise<unknown>,
): Promise<void> {
  const base = Deno.args[0];
  if (!base) {
    console.error(`usage: deno run -A ${script} <server base URL>`);
    Deno.exit(2);
  }
  console.log(JSON.stringify(await check(base)));
}
