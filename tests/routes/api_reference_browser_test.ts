import assert from "node:assert/strict";
// Type only: importing the script's module would load playwright-core in this process.
import type { ApiReferenceReport } from "../support/api_reference_check.ts";
import { hasChromium, runPageCheck } from "../support/browser.ts";
import { startTestServer } from "../support/server.ts";

const CHROMIUM_PRESENT = await hasChromium("api_reference_browser_test");

const CHECK = new URL("../support/api_reference_check.ts", import.meta.url).pathname;

/**
 * Opens `/docs` (Swagger UI) in headless Chromium with every request to another host aborted:
 * every operation of `/openapi.json` is shown, and `GET /rest/books` run from the page shows the
 * catalogue. Proves the page works offline under its CSP: all of it comes from this server.
 */
Deno.test({
  name: "the API reference shows every operation and runs one in headless Chromium, offline",
  ignore: !CHROMIUM_PRESENT,
  fn: async () => {
    const server = await startTestServer();
    try {
      const report = await runPageCheck<ApiReferenceReport>(CHECK, server.httpUrl);
      console.log(`requests: ${report.requests.join(", ")}`);

      assert.deepEqual(report.blocked, [], "the page asked another host");
      assert.deepEqual(report.problems, [], "page or CSP errors");
      const document = await (await fetch(`${server.httpUrl}/openapi.json`)).json();
      const documented = Object.entries(document.paths as Record<string, object>).flatMap((
        [path, operations],
      ) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`));
      assert.deepEqual(report.operations.toSorted(), documented.toSorted());
      assert.ok(documented.includes("PATCH /addresses/{id}"));

      assert.equal(report.executedStatus, "200");
      const books = await (await fetch(`${server.httpUrl}/rest/books`)).json();
      assert.deepEqual(JSON.parse(report.executedBody), books);
      for (
        const asset of [
          "GET /docs/assets/swagger-ui-bundle.js",
          "GET /docs/assets/swagger-ui.css",
          "GET /docs/assets/init.js",
          "GET /openapi.json",
          "GET /rest/books",
        ]
      ) assert.ok(report.requests.includes(asset), asset);
    } finally {
      await server.close();
    }
  },
});

Deno.test("the API reference page and its assets: types, CSP, unknown asset 404", async () => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  try {
    const page = await fetch(`${server.httpUrl}/docs`);
    assert.equal(page.status, 200);
    assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
    const csp = page.headers.get("content-security-policy") ?? "";
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /connect-src 'self'/);
    const html = await page.text();
    assert.ok(!/<script>/.test(html), "no inline script");
    assert.ok(!/https?:\/\//.test(html), "no other host named");
    const js = await fetch(`${server.httpUrl}/docs/assets/swagger-ui-bundle.js`);
    assert.equal(js.status, 200);
    assert.equal(js.headers.get("content-type"), "text/javascript; charset=utf-8");
    assert.ok((await js.arrayBuffer()).byteLength > 100_000);
    const missing = await fetch(`${server.httpUrl}/docs/assets/index.html`);
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).errors[0].error, "route-not-found");
  } finally {
    await server.close();
  }
});
