import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { BooksService } from "../../rpc/gen/books/v1/books_pb.ts";
import { ConfigError, loadConfig } from "../../lib/config.ts";
import { startTestServer } from "../support/server.ts";

Deno.test("GRPC_CHILD_DENO_FLAGS: flags separated by spaces; anything else stops start-up", () => {
  assert.deepEqual(loadConfig({}).grpcChildFlags, []);
  assert.deepEqual(
    loadConfig({ GRPC_CHILD_DENO_FLAGS: "  --cpu-prof   --v8-flags=--trace-gc " }).grpcChildFlags,
    ["--cpu-prof", "--v8-flags=--trace-gc"],
  );
  for (const value of ["cpu-prof", "--cpu-prof main.ts", "--inspect -A"]) {
    assert.throws(
      () => loadConfig({ GRPC_CHILD_DENO_FLAGS: value }),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.message === `invalid GRPC_CHILD_DENO_FLAGS=${JSON.stringify(value)}: ` +
            "must be `deno run` flags separated by spaces, each starting with --",
    );
  }
});

Deno.test("the gRPC child runs with GRPC_CHILD_DENO_FLAGS, its own V8 flags kept", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-child-flags-" });
  const server = await startTestServer({
    GRPC_CHILD_DENO_FLAGS: `--cpu-prof --cpu-prof-dir=${dir} --v8-flags=--stack-size=900`,
  });
  let childPid: number;
  try {
    const session = new Http2SessionManager(server.grpcUrl!);
    try {
      const client = createClient(
        BooksService,
        createGrpcTransport({ baseUrl: server.grpcUrl!, sessionManager: session }),
      );
      assert.ok((await client.books({}, { timeoutMs: 5000 })).book.length > 0);
    } finally {
      session.abort();
    }
    const listening = server.logs.find((l) => l.msg === "grpc listening")!;
    childPid = listening.pid as number;
    const ps = await new Deno.Command("ps", { args: ["-o", "args=", "-p", String(childPid)] })
      .output();
    const args = new TextDecoder().decode(ps.stdout).trim().split(/\s+/);
    const v8 = args.filter((a) => a.startsWith("--v8-flags="));
    assert.equal(v8.length, 1, "one --v8-flags (Deno keeps only the last)");
    assert.match(v8[0]!, /^--v8-flags=--max-semi-space-size=\d+.*,--stack-size=900$/);
    assert.ok(args.includes("--cpu-prof"));
  } finally {
    await server.close();
  }
  // The profiler wrote the child's profile when it stopped.
  const written = [];
  for await (const entry of Deno.readDir(dir)) written.push(entry.name);
  await Deno.remove(dir, { recursive: true });
  assert.ok(
    written.some((name) => name.includes(`.${childPid}.`) && name.endsWith(".cpuprofile")),
    `${written}`,
  );
});
