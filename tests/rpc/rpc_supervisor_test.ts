import assert from "node:assert/strict";
import { startSupervisedGrpc } from "../../rpc/process/grpc_supervisor.ts";
import { captureLogs, waitForLine } from "../support/logs.ts";
import { waitFor } from "../support/process.ts";
import { booksClient, grpcTransport, http2Session } from "../support/rpc_clients.ts";
import { startTestServer } from "../support/server.ts";

/** The number of books one gRPC call on a connection of its own returns. */
async function grpcBooks(baseUrl: string): Promise<number> {
  using session = http2Session(baseUrl);
  const client = booksClient(grpcTransport(baseUrl, session));
  return (await client.books({}, { timeoutMs: 5000 })).book.length;
}

Deno.test("the gRPC listener dying is contained: HTTP keeps serving, gRPC comes back", async () => {
  const server = await startTestServer();
  try {
    const books = await grpcBooks(server.grpcUrl!);
    assert.ok(books >= 25);
    const first = await waitForLine(() => server.logs, "grpc listening");
    assert.equal(first.grpc, server.grpcUrl);
    assert.notEqual(first.pid, Deno.pid, "the gRPC listener runs in its own process");

    // What Deno 2.9.6's nghttp2 abort does to the process, done on purpose.
    Deno.kill(first.pid as number, "SIGKILL");
    const died = await waitForLine(() => server.logs, "grpc listener died; restarting");
    assert.equal(died.signal, "SIGKILL");
    assert.equal(died.restarts, 1);
    assert.equal(died.stderr, "", "killed: nothing on its stderr");

    // The HTTP port never went away.
    const rest = await fetch(`${server.httpUrl}/rest/books`);
    assert.equal(rest.status, 200);
    assert.equal((await rest.json()).length, books);

    const again = await waitForLine(() => server.logs, "grpc listener restarted");
    assert.equal(again.grpc, server.grpcUrl, "restarted on the same port");
    const second = server.logs.filter((l) => l.msg === "grpc listening").at(-1)!;
    assert.notEqual(second.pid, first.pid);
    assert.equal(await grpcBooks(server.grpcUrl!), books);
  } finally {
    await server.close();
  }
  // After shutdown the child is gone too: nothing listens on the gRPC port.
  await assert.rejects(grpcBooks(server.grpcUrl!));
});

Deno.test("the supervisor says why a child died: one line with the code, the count and its stderr's first lines", async () => {
  const { logger, lines: logs } = captureLogs("info");
  const supervised = await startSupervisedGrpc(
    {
      port: 0,
      host: "127.0.0.1",
      kvPath: ":memory:",
      booksFile: undefined,
      tls: undefined,
      logLevel: "info",
      auth: undefined,
      rateLimit: undefined,
    },
    logger,
    { entry: new URL("../support/crashing_grpc_child.ts", import.meta.url).pathname },
  );
  try {
    await waitFor("two deaths", () => {
      logger.flush();
      const died = logs.filter((l) => l.msg === "grpc listener died; restarting");
      return died.length >= 2 ? died : undefined;
    });
  } finally {
    await supervised.shutdown();
  }
  logger.flush();
  const died = logs.filter((l) => l.msg === "grpc listener died; restarting");
  assert.deepEqual(died.slice(0, 2).map((l) => [l.code, l.signal, l.restarts]), [
    [1, null, 1],
    [1, null, 2],
  ]);
  for (const line of died) {
    assert.equal(line.level, "error");
    const stderr = String(line.stderr);
    // The error and the top of its stack, not the noise before it, and no colour codes.
    assert.match(
      stderr,
      /^error: Uncaught (\(in promise\) )?Error: on purpose: the test child fails\n/,
    );
    assert.match(stderr, /\n {4}at explode \(file:\/\/.*crashing_grpc_child\.ts:\d+:\d+\)/);
    assert.ok(!stderr.includes("\x1b"), stderr);
    assert.ok(!stderr.includes("Warning"), stderr);
    assert.ok(stderr.split("\n").length <= 12);
  }
  // One line per crash: no separate stderr line.
  assert.deepEqual(logs.filter((l) => l.msg === "grpc listener stderr"), []);
  assert.ok(
    logs.filter((l) => l.msg === "grpc listener restarted").every((l, i) => l.restarts === i + 1),
  );
});
