import assert from "node:assert/strict";
// Type only: importing the script's module would load playwright-core in this process.
import type { GraphiqlReport } from "../support/graphiql_check.ts";
import { hasChromium, runPageCheck } from "../support/browser.ts";
import { startTestServer } from "../support/server.ts";

const CHROMIUM_PRESENT = await hasChromium("graphiql_browser_test");

const CHECK = new URL("../support/graphiql_check.ts", import.meta.url).pathname;

/**
 * Opens GraphiQL in headless Chromium with every request to another host aborted, runs the books
 * query from the page and compares what it shows with GET /rest/books. Proves the page works
 * offline: all its scripts and styles come from this server.
 */
Deno.test({
  name:
    "GraphiQL runs the books query and a subscription in headless Chromium with no other host reachable",
  ignore: !CHROMIUM_PRESENT,
  fn: async () => {
    const server = await startTestServer();
    try {
      const report = await runPageCheck<GraphiqlReport>(CHECK, server.httpUrl);
      console.log(`requests: ${report.requests.join(", ")}`);
      console.log(`blocked (other hosts): ${report.blocked.join(", ") || "none"}`);

      const rest = await (await fetch(`${server.httpUrl}/rest/books`)).json();
      // deno-lint-ignore no-explicit-any
      const expected = rest.map(({ id: _, ...book }: any) => book);
      assert.deepEqual(JSON.parse(report.shown), { data: { books: expected } });
      assert.ok(report.schemaLoaded, "GraphiQL's schema query failed");
      assert.deepEqual(report.blocked, [], "the page asked another host");
      assert.deepEqual(report.problems, []);
      assert.ok(report.requests.includes("GET /graphql/assets/graphiql.min.js"));
      assert.ok(report.requests.includes("POST /graphql"));
      // The subscription ran from the page, over its own assets, and showed the change.
      assert.ok(report.requests.includes("GET /graphql/assets/graphql-sse.min.js"));
      const shown = JSON.parse(report.streamed);
      assert.equal(shown.data.addressEvents.type, "CREATED");
      assert.equal(shown.data.addressEvents.id, String(report.createdId));
    } finally {
      await server.close();
    }
  },
});
