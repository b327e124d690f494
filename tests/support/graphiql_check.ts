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
  /** The result pane while a subscription runs, after an address was created meanwhile. */
  streamed: string;
  /** The id of that address. */
  createdId: number;
}

const RESULT_EDITOR = ".result-window .CodeMirror";

// The next two run inside the page (Playwright sends their source; a string would be run with
// eval, which the page's CSP forbids). This file is type-checked without the DOM library.
// deno-lint-ignore no-explicit-any
type PageGlobal = any;

function resultText(selector: string): string {
  return (globalThis as PageGlobal).document.querySelector(selector)?.CodeMirror?.getValue() ?? "";
}

function setQuery(query: string): void {
  (globalThis as PageGlobal).document.querySelector(".graphiql-query-editor .CodeMirror").CodeMirror
    .setValue(query);
}

function resultIncludes([selector, text]: string[]): boolean {
  const editor = (globalThis as PageGlobal).document.querySelector(selector)?.CodeMirror;
  return (editor?.getValue() ?? "").includes(text);
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
    streamed: "",
    createdId: 0,
  };
  const { browser, page } = await openOfflinePage(base, report);
  try {
    const answers: Promise<string>[] = [];
    page.on("response", (response) => {
      // A subscription's stream never ends while the page is open: not read here.
      const streamed = response.headers()["content-type"]?.startsWith("text/event-stream");
      if (response.request().method() === "POST" && !streamed) answers.push(response.text());
    });

    const response = await page.goto(`${base}/graphql`);
    if (response?.status() !== 200) throw new Error(`GET /graphql answered ${response?.status()}`);
    await page.waitForSelector(".graphiql-execute-button", { timeout: 30_000 });
    await page.click(".graphiql-execute-button");
    await page.waitForFunction(resultShowsBooks, RESULT_EDITOR, { timeout: 30_000 });
    report.shown = await page.evaluate(resultText, RESULT_EDITOR);
    const bodies = await Promise.all(answers);
    report.schemaLoaded = bodies.some((b) => b.includes('"__schema"') && !b.includes('"errors"'));

    // A subscription: it opens (its position shows), then a change made meanwhile shows.
    await page.evaluate(setQuery, "subscription { addressEvents { type id cursor } }");
    await page.click(".graphiql-execute-button");
    await page.waitForFunction(resultIncludes, [RESULT_EDITOR, '"OPENED"'], { timeout: 30_000 });
    const created = await fetch(`${base}/addresses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "Grace Hopper", city: "New York", postalCode: "10001" }),
    });
    report.createdId = (await created.json()).id;
    await page.waitForFunction(resultIncludes, [RESULT_EDITOR, '"CREATED"'], { timeout: 30_000 });
    report.streamed = await page.evaluate(resultText, RESULT_EDITOR);
    return report;
  } finally {
    await browser.close();
  }
}

if (import.meta.main) await printReport("tests/support/graphiql_check.ts", checkGraphiql);
