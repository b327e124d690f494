/**
 * Loads the API reference (`/docs`, Swagger UI) from a running server in headless Chromium with
 * every request to another host aborted, waits for the operations of `/openapi.json` to render,
 * runs `GET /rest/books` from the page ("Try it out", "Execute"), and prints a JSON report.
 *
 *   deno run -A tests/support/api_reference_check.ts http://127.0.0.1:8000
 *
 * A script of its own for the same reason as graphiql_check.ts (playwright-core needs
 * --allow-all at import).
 */
import { printReport } from "./browser.ts";
import { openOfflinePage, type PageRecord } from "./offline_page.ts";

/** What the page did. */
export interface ApiReferenceReport extends PageRecord {
  /** `METHOD path` of every operation the page shows. */
  operations: string[];
  /** The response status Swagger UI shows after executing `GET /rest/books`. */
  executedStatus: string;
  /** The response body it shows. */
  executedBody: string;
}

/** Drives Swagger UI at `${base}/docs`. */
async function checkApiReference(base: string): Promise<ApiReferenceReport> {
  const report: ApiReferenceReport = {
    requests: [],
    blocked: [],
    problems: [],
    operations: [],
    executedStatus: "",
    executedBody: "",
  };
  const { browser, page } = await openOfflinePage(base, report);
  try {
    const response = await page.goto(`${base}/docs`);
    if (response?.status() !== 200) throw new Error(`GET /docs answered ${response?.status()}`);
    await page.waitForSelector(".opblock", { timeout: 30_000 });
    const blocks = page.locator(".opblock .opblock-summary");
    for (const block of await blocks.all()) {
      const method = (await block.locator(".opblock-summary-method").innerText()).trim();
      const path = (await block.locator(".opblock-summary-path").innerText()).trim();
      report.operations.push(`${method} ${path.replaceAll("\u200b", "")}`);
    }
    const books = page.locator("#operations-default-get_rest_books, .opblock-get").filter({
      hasText: "/rest/books",
    }).first();
    await books.locator(".opblock-summary").click();
    await books.locator("button.try-out__btn").click();
    await books.locator("button.execute").click();
    const status = books.locator(".live-responses-table tbody .response-col_status").first();
    await status.waitFor({ timeout: 30_000 });
    report.executedStatus = (await status.innerText()).trim();
    report.executedBody = await books.locator(".live-responses-table .microlight").first()
      .innerText();
    return report;
  } finally {
    await browser.close();
  }
}

if (import.meta.main) await printReport("tests/support/api_reference_check.ts", checkApiReference);
