import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { BooksService } from "../../rpc/gen/books/v1/books_pb.ts";
import { writeLines } from "../../lib/stdout_lines.ts";
import { checkContract } from "../support/contract.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

Deno.test("log text is written in line-aligned writes of at most 4096 bytes", () => {
  const line = (n: number, fill: string) => `${fill.repeat(n - 1)}\n`;
  const text = [
    ...Array.from({ length: 30 }, (_, i) => line(300 + i, "a")),
    line(9000, "é"), // one line longer than the limit (two bytes a character)
    ...Array.from({ length: 5 }, () => line(100, "b")),
  ].join("");
  const bytes = new TextEncoder().encode(text);
  const writes: Uint8Array[] = [];
  // A sink that takes at most 1000 bytes a call, as a write(2) may.
  writeLines(bytes, (chunk) => {
    const taken = chunk.slice(0, 1000);
    writes.push(taken);
    return taken.byteLength;
  });
  assert.equal(new TextDecoder().decode(concat(writes)), text, "every byte, in order");

  // Regrouped into the pieces writeLines handed over: each ends a line, and only a piece of a
  // single line is over the limit.
  const pieces: Uint8Array[] = [];
  writeLines(bytes, (chunk) => (pieces.push(chunk.slice()), chunk.byteLength));
  for (const piece of pieces) {
    assert.equal(piece.at(-1), 0x0a);
    const lines = piece.filter((b) => b === 0x0a).length;
    assert.ok(piece.byteLength <= 4096 || lines === 1, `${piece.byteLength} B, ${lines} lines`);
  }
  assert.ok(pieces.length >= 4);
});

Deno.test("the server and its gRPC child share stdout without tearing a line, even when the reader falls behind", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-stdout-" });
  const server = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--allow-write",
      "--allow-run",
      MAIN,
    ],
    env: {
      PORT: "0",
      GRPC_PORT: "0",
      HOST: "127.0.0.1",
      KV_PATH: `${dir}/kv.sqlite3`,
      SHUTDOWN_DRAIN_S: "0",
    },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = server.stdout.getReader();
  const chunks: Uint8Array[] = [];
  // Reads until `done()` is true of what was read so far.
  async function readUntil(done: (text: string) => boolean): Promise<string> {
    let text = new TextDecoder().decode(concat(chunks));
    while (!done(text)) {
      const { value, done: ended } = await reader.read();
      if (ended) throw new Error(`stdout ended:\n${text.slice(-2000)}`);
      chunks.push(value);
      text = new TextDecoder().decode(concat(chunks));
    }
    return text;
  }
  const started = await readUntil((text) => text.includes('"msg":"listening"'));
  const listening = JSON.parse(started.split("\n").find((l) => l.includes('"msg":"listening"'))!);
  const httpUrl = String(listening.http);
  const grpcUrl = String(listening.grpc);
  checkContract(httpUrl);

  const session = new Http2SessionManager(grpcUrl);
  const client = createClient(
    BooksService,
    createGrpcTransport({ baseUrl: grpcUrl, sessionManager: session }),
  );
  let pumping: Promise<void> | undefined;
  const grpcIds: string[] = [];
  const httpIds: string[] = [];
  try {
    // Both processes log while nobody reads their shared pipe: it fills, their writes block
    // part-way, and they resume together once it is read again.
    const grpcCalls = Array.from({ length: 64 }, async (_, worker) => {
      for (let i = 0; i < 25; i++) {
        const id = `grpc-${worker}-${i}`;
        grpcIds.push(id);
        const { book } = await client.books({}, {
          headers: { "x-request-id": id },
          timeoutMs: 30_000,
        });
        assert.ok(book.length > 0);
      }
    });
    const httpCalls = Array.from({ length: 64 }, async (_, worker) => {
      for (let i = 0; i < 25; i++) {
        const id = `http-${worker}-${i}`;
        httpIds.push(id);
        const response = await fetch(`${httpUrl}/rest/books`, { headers: { "x-request-id": id } });
        assert.equal(response.status, 200);
        await response.body?.cancel();
      }
    });
    const load = Promise.all([...grpcCalls, ...httpCalls]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    // From here on everything is read, as it comes.
    reader.releaseLock();
    pumping = (async () => {
      for await (const chunk of server.stdout) chunks.push(chunk);
    })();
    await load;
  } finally {
    session.abort();
    server.kill("SIGTERM");
    if (!pumping) {
      reader.releaseLock();
      pumping = (async () => {
        for await (const chunk of server.stdout) chunks.push(chunk);
      })();
    }
    await pumping;
    await server.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }

  const text = new TextDecoder().decode(concat(chunks));
  const lines = text.split("\n").filter((l) => l !== "");
  const parsed = lines.map((line) => {
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw new Error(`a torn line: ${line.slice(0, 300)}`);
    }
  });
  const ids = (msg: string) => parsed.filter((l) => l.msg === msg).map((l) => String(l.requestId));
  assert.deepEqual(ids("rpc").toSorted(), grpcIds.toSorted(), "one whole rpc line per call");
  assert.deepEqual(
    ids("request").filter((id) => id.startsWith("http-")).toSorted(),
    httpIds.toSorted(),
    "one whole request line per request",
  );
});

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
