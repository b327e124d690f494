import { type Browser, chromium, type Page } from "playwright-core";
import { CHROMIUM } from "./browser.ts";

/** What a page did on the network and in its console. */
export interface PageRecord {
  /** `METHOD /path` of every request to the server. */
  requests: string[];
  /** URLs of requests to any other host (aborted). */
  blocked: string[];
  /** Page errors and console errors (CSP violations among them). */
  problems: string[];
}

/**
 * Opens a page in headless Chromium that may reach only `base`'s host: every request to another
 * host is aborted and recorded in `record`, as are the page's errors. The flags keep Chromium
 * from calling home on a machine without internet access.
 */
export async function openOfflinePage(
  base: string,
  record: PageRecord,
): Promise<{ browser: Browser; page: Page }> {
  const origin = new URL(base);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const page = await browser.newPage();
  await page.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === "data:") return route.continue();
    if (url.host !== origin.host) {
      record.blocked.push(url.href);
      return route.abort("blockedbyclient");
    }
    record.requests.push(`${route.request().method()} ${url.pathname}`);
    return route.continue();
  });
  page.on("pageerror", (error) => record.problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") record.problems.push(`console: ${message.text()}`);
  });
  return { browser, page };
}
