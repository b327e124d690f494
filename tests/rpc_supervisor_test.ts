import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { BooksService } from "../rpc/gen/books/v1/books_pb.ts";
import { startTestServer } from "./support/server.ts";

async function grpcBooks(baseUrl: string): Promise<number> {
  const session = new Http2SessionManager(baseUrl);
  try {
    const client = createClient(
      BooksService,
      createGrpcTransport({ baseUrl, sessionManager: session }),
    );
    return (await client.books({}, { timeoutMs: 5000 })).book.length;
  } finally {
    session.abort();
  }
}

async function waitFor<T>(what: string, probe: () => T | undefined, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

Deno.test("the gRPC listener dying is contained: HTTP keeps serving, gRPC comes back", async () => {
  const server = await startTestServer();
  try {
    const books = await grpcBooks(server.grpcUrl!);
    assert.ok(books >= 25);
    const first = await waitFor(
      "the child's listening line",
      () => server.logs.find((l) => l.msg === "grpc listening"),
    );
    assert.equal(first.grpc, server.grpcUrl);
    assert.notEqual(first.pid, Deno.pid, "the gRPC listener runs in its own process");

    // What Deno 2.9.6's nghttp2 abort does to the process, done on purpose.
    Deno.kill(first.pid as number, "SIGKILL");
    await waitFor(
      "the supervisor to notice",
      () => server.logs.find((l) => l.msg === "grpc listener died; restarting"),
    );

    // The HTTP port never went away.
    const rest = await fetch(`${server.httpUrl}/rest/books`);
    assert.equal(rest.status, 200);
    assert.equal((await rest.json()).length, books);

    const again = await waitFor(
      "the restart",
      () => server.logs.find((l) => l.msg === "grpc listener restarted"),
    );
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
