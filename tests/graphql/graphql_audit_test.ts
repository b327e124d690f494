import assert from "node:assert/strict";
import { serverAudits } from "graphql-http";
import { startTestServer } from "../support/server.ts";

/**
 * The GraphQL-over-HTTP conformance audit of the `graphql-http` package, run against the real
 * server over a socket. Every MUST and every SHOULD has to pass. MAYs may fail only where they
 * execute operations over GET, which this server refuses (docs/graphql.md: POST only).
 */
Deno.test("GraphQL-over-HTTP audit (graphql-http serverAudits)", async () => {
  const server = await startTestServer();
  try {
    const audits = serverAudits({ url: `${server.httpUrl}/graphql` });
    const results = [];
    for (const audit of audits) results.push(await audit.fn());
    const failures: string[] = [];
    const counts: Record<string, { ok: number; failed: number }> = {};
    for (const result of results) {
      const level = result.name.split(" ")[0]!;
      counts[level] ??= { ok: 0, failed: 0 };
      if (result.status === "ok") {
        counts[level].ok++;
        continue;
      }
      counts[level].failed++;
      await result.response.body?.cancel();
      const allowed = level === "MAY" && result.name.includes("GET");
      if (!allowed) failures.push(`${result.name}: ${result.reason}`);
    }
    console.log("audit:", JSON.stringify(counts));
    assert.deepEqual(failures, []);
    assert.ok((counts.MUST?.ok ?? 0) > 0 && (counts.SHOULD?.ok ?? 0) > 0);
  } finally {
    await server.close();
  }
});
