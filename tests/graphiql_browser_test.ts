import assert from "node:assert/strict";
// Type only: importing the script's module would load playwright-core in this process.
import type { GraphiqlReport } from "./support/graphiql_check.ts";
import { startTestServer } from "./support/server.ts";

const CHROMIUM = "/usr/bin/chromium";

const hasChromium = await Deno.stat(CHROMIUM).then(() => true, () => false);
if (!hasChromium) {
  console.warn(
    `graphiql_browser_test: skipped, ${CHROMIUM} is absent (apt-get install -y chromium)`,
  );
}

const CHECK = new URL("./support/graphiql_check.ts", import.meta.url).pathname;

/**
 * Opens GraphiQL in headless Chromium with every request to another host aborted, runs the books
 * query from the page and compares what it shows with GET /rest/books. Proves the page works
 * offline: all its scripts and styles come from this server.
 */
Deno.test({
  name: "GraphiQL runs the books query in headless Chromium with no other host reachable",
  ignore: !hasChromium,
  fn: async () => {
    const server = await startTestServer();
    try {
      const run = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", CHECK, server.httpUrl],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(run.stderr);
      assert.equal(run.code, 0, stderr);
      const report: GraphiqlReport = JSON.parse(new TextDecoder().decode(run.stdout));
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
    } finally {
      await server.close();
    }
  },
});
