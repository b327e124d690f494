/**
 * Loads GraphiQL from a running server in headless Chromium with every request to another host
 * aborted, runs the books query from the page, and prints a JSON report on stdout:
 * `{requests, blocked, problems, shown, schemaLoaded}`.
 *
 *   deno run -A tests/support/graphiql_check.ts http://127.0.0.1:8000
 *
 * A script of its own, run by tests/graphql/graphiql_browser_test.ts, because playwright-core probes
 * /proc at import, which Deno allows only with --allow-all (the test task grants less).
 */
import { printReport } from "./browser.ts";
import { openOfflinePage, type PageRecord } from "./offline_page.ts";

/** What the page did. */
export interface GraphiqlReport extends PageRecord {
  /** The text of GraphiQL's result pane after running the default (books) query. */
  shown: string;
  /** True when GraphiQL's introspection query answered without errors. */
  schemaLoaded: boolean;
}

const RESULT_EDITOR = ".result-window .CodeMirror";

// The next two run inside the page (Playwright sends their source; a string would be run with
// eval, which the page's CSP forbids). This file is type-checked without the DOM library.
// deno-lint-ignore no-explicit-any
type PageGlobal = any;

function resultText(selector: string): string {
  return (globalThis as PageGlobal).document.querySelector(selector)?.CodeMirror?.getValue() ?? "";
}

function resultShowsBooks(selector: string): boolean {
  const editor = (globalThis as PageGlobal).document.querySelector(selector)?.CodeMirror;
  return (editor?.getValue() ?? "").includes('"books"');
}

/** Drives GraphiQL at `${base}/graphql`. */
async function checkGraphiql(base: string): Promise<GraphiqlReport> {
  const report: GraphiqlReport = {
    requests: [],
    blocked: [],
    problems: [],
    shown: "",
    schemaLoaded: false,
  };
  const { browser, page } = await openOfflinePage(base, report);
  try {
    const answers: Promise<string>[] = [];
    page.on("response", (response) => {
      if (response.request().method() === "POST") answers.push(response.text());
    });

    const response = await page.goto(`${base}/graphql`);
    if (response?.status() !== 200) throw new Error(`GET /graphql answered ${response?.status()}`);
    await page.waitForSelector(".graphiql-execute-button", { timeout: 30_000 });
    await page.click(".graphiql-execute-button");
    await page.waitForFunction(resultShowsBooks, RESULT_EDITOR, { timeout: 30_000 });
    report.shown = await page.evaluate(resultText, RESULT_EDITOR);
    const bodies = await Promise.all(answers);
    report.schemaLoaded = bodies.some((b) => b.includes('"__schema"') && !b.includes('"errors"'));
    return report;
  } finally {
    await browser.close();
  }
}

if (import.meta.main) await printReport("tests/support/graphiql_check.ts", checkGraphiql);
