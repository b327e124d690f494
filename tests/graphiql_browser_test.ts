import assert from "node:assert/strict";
import { startTestServer } from "./support/server.ts";

const CHROMIUM = "/usr/bin/chromium";
const hasChromium = await Deno.stat(CHROMIUM).then(() => true, () => false);
if (!hasChromium) {
  console.warn(
    `graphiql_browser_test: skipped, ${CHROMIUM} is absent (apt-get install -y chromium)`,
  );
}

const RESULT_EDITOR = ".result-window .CodeMirror";

// The next two run inside the page (Playwright sends their source; a string would be run with
// eval, which the page's CSP forbids). Tests type-check without the DOM library, hence `any`.
// deno-lint-ignore no-explicit-any
type PageGlobal = any;

function resultText(selector: string): string {
  return (globalThis as PageGlobal).document.querySelector(selector)?.CodeMirror?.getValue() ?? "";
}

function resultShowsBooks(selector: string): boolean {
  const editor = (globalThis as PageGlobal).document.querySelector(selector)?.CodeMirror;
  return (editor?.getValue() ?? "").includes('"books"');
}

/**
 * Opens GraphiQL in headless Chromium with every request to another host aborted, runs the books
 * query from the page and compares what it shows with GET /rest/books. Proves the page works
 * offline: all its scripts and styles come from this server.
 */
Deno.test({
  name: "GraphiQL runs the books query in headless Chromium with no other host reachable",
  ignore: !hasChromium,
  // Playwright keeps a pipe and timers to the browser process open across awaits.
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const { chromium } = await import("playwright-core");
    const server = await startTestServer();
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
    try {
      const origin = new URL(server.httpUrl);
      const page = await browser.newPage();
      const ours: string[] = [];
      const blocked: string[] = [];
      const problems: string[] = [];
      await page.route("**/*", (route) => {
        const url = new URL(route.request().url());
        if (url.host !== origin.host) {
          blocked.push(url.href);
          return route.abort("blockedbyclient");
        }
        ours.push(`${route.request().method()} ${url.pathname}`);
        return route.continue();
      });
      page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
      page.on("console", (message) => {
        if (message.type() === "error") problems.push(`console: ${message.text()}`);
      });
      const graphqlBodies: string[] = [];
      page.on("response", async (response) => {
        if (response.request().method() === "POST") graphqlBodies.push(await response.text());
      });

      const response = await page.goto(`${server.httpUrl}/graphql`);
      assert.equal(response?.status(), 200);
      await page.waitForSelector(".graphiql-execute-button", { timeout: 30_000 });
      await page.click(".graphiql-execute-button");
      await page.waitForFunction(resultShowsBooks, RESULT_EDITOR, { timeout: 30_000 });
      const shown = await page.evaluate(resultText, RESULT_EDITOR);

      const rest = await (await fetch(`${server.httpUrl}/rest/books`)).json();
      // deno-lint-ignore no-explicit-any
      const expected = rest.map(({ id: _, ...book }: any) => book);
      assert.deepEqual(JSON.parse(shown), { data: { books: expected } });
      // GraphiQL's own schema query went through the limits and succeeded.
      assert.ok(
        graphqlBodies.some((body) => body.includes('"__schema"') && !body.includes('"errors"')),
        "introspection failed",
      );
      console.log(`requests: ${ours.join(", ")}`);
      console.log(`blocked (other hosts): ${blocked.length === 0 ? "none" : blocked.join(", ")}`);
      assert.deepEqual(blocked, [], "the page asked another host");
      assert.deepEqual(problems, []);
      assert.ok(ours.some((r) => r.endsWith("/graphql/assets/graphiql.min.js")));
    } finally {
      await browser.close();
      await server.close();
    }
  },
});
