/**
 * Property-based fuzzing of the RPC protocols over real sockets (docs/fuzzing.md): Connect and
 * gRPC-Web on both ports, native gRPC on the gRPC listener. Every answer: no 5xx (but a
 * deadline the client asked for), no INTERNAL or UNKNOWN status, no internals in a message,
 * the error shape of its protocol; the server keeps serving and the catalogue is unchanged.
 */
import assert from "node:assert/strict";
import type http2 from "node:http2";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { BooksService } from "../rpc/gen/books/v1/books_pb.ts";
import {
  assertDetailedErrorBody,
  assertNoInternals,
  CONNECT_CLIENT_CODES,
  fuzz,
  isClientGrpcStatus,
} from "./support/fuzz.ts";
import { type RpcCase, rpcCase, type RpcProtocol } from "./support/fuzz_rpc.ts";
import { h2Request } from "./support/raw_http.ts";
import { grpcWebTrailer, rawSession } from "./support/rpc_clients.ts";
import { startTestServer } from "./support/server.ts";

interface Answer {
  status: number;
  headers: Headers;
  trailers: Headers;
  body: Uint8Array;
}

// Every call fuzzed here is unary or ends with its input (health Watch, which never ends, is
// left out), so an answer that takes this long is a hang.
const ANSWER_TIMEOUT_MS = 10_000;

async function viaFetch(base: string, c: RpcCase): Promise<Answer | undefined> {
  let request: Request;
  try {
    request = new Request(base + c.path, {
      method: c.method,
      headers: c.headers,
      body: c.method === "GET" ? undefined : c.body,
    });
  } catch {
    return undefined; // fetch refuses the header values themselves
  }
  const res = await fetch(request, { signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS) });
  return {
    status: res.status,
    headers: res.headers,
    trailers: new Headers(),
    body: new Uint8Array(await res.arrayBuffer()),
  };
}

async function viaHttp2(
  session: http2.ClientHttp2Session,
  c: RpcCase,
): Promise<Answer | undefined> {
  let answer: Promise<Answer>;
  try {
    answer = h2Request(session, {
      method: c.method,
      target: c.path,
      headers: { te: "trailers", ...c.headers },
      body: c.method === "GET" ? undefined : c.body,
    }, ANSWER_TIMEOUT_MS);
  } catch {
    return undefined; // node:http2 refuses the header values themselves
  }
  return await answer;
}

function decodeMessage(value: string | null): string {
  if (!value) return "";
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** Checks one answer against the invariants. */
function checkRpc(c: RpcCase, port: string, a: Answer): void {
  const where = `${port} ${c.protocol} ${c.method} ${c.path} ${
    c.headers["content-type"] ?? ""
  } -> ${a.status}`;
  const type = (a.headers.get("content-type") ?? "").toLowerCase();
  const text = new TextDecoder().decode(a.body);
  const grpcStatus = a.headers.get("grpc-status") ?? a.trailers.get("grpc-status") ??
    (type.startsWith("application/grpc-web")
      ? grpcWebTrailer(type, a.body)?.get("grpc-status") ?? null
      : null);
  const grpcMessage = a.headers.get("grpc-message") ?? a.trailers.get("grpc-message") ??
    (type.startsWith("application/grpc-web")
      ? grpcWebTrailer(type, a.body)?.get("grpc-message") ?? null
      : null);
  if (grpcStatus !== null) {
    const message = decodeMessage(grpcMessage);
    assert.ok(
      isClientGrpcStatus(Number(grpcStatus)),
      `${where}: grpc-status ${grpcStatus} (${message}) for client input`,
    );
    assertNoInternals(message, where);
    assert.equal(a.status, 200, `${where}: gRPC answer with HTTP ${a.status}`);
    return;
  }
  if (type.startsWith("application/json") && a.status >= 400) {
    const body = JSON.parse(text);
    assertNoInternals(text, where);
    if (typeof body.code === "string") {
      assert.ok(
        CONNECT_CLIENT_CODES.has(body.code),
        `${where}: Connect code ${body.code}: ${text}`,
      );
      assert.equal(typeof body.message === "string" || body.message === undefined, true, where);
      const timed = "connect-timeout-ms" in c.headers || "grpc-timeout" in c.headers;
      if (a.status >= 500) {
        assert.ok(
          (body.code === "deadline_exceeded" && timed) || body.code === "unimplemented",
          `${where}: ${text}`,
        );
      }
      return;
    }
    assertDetailedErrorBody(body, where);
    assert.ok(a.status < 500, `${where}: ${text}`);
    return;
  }
  assert.ok(a.status < 500, `${where}: ${text.slice(0, 200)}`);
  if (a.status >= 400 && text !== "") assertNoInternals(text, where);
}

Deno.test("RPC fuzz: Connect, gRPC-Web and gRPC on both ports never answer INTERNAL or 5xx", async (t) => {
  const server = await startTestServer();
  const session = rawSession(server.grpcUrl!);
  try {
    const transport = createConnectTransport({ baseUrl: server.httpUrl });
    const books = createClient(BooksService, transport);
    const before = await books.books({});
    const protocols: RpcProtocol[] = ["connect", "grpc-web"];
    for (const protocol of protocols) {
      await t.step(`HTTP port, ${protocol}`, async () => {
        await fuzz(`RPC HTTP port ${protocol}`, 200, rpcCase(protocol), async (c) => {
          const answer = await viaFetch(server.httpUrl, c);
          if (answer) checkRpc(c, "http", answer);
        });
      });
    }
    for (const protocol of ["connect", "grpc-web", "grpc"] as RpcProtocol[]) {
      await t.step(`gRPC port, ${protocol}`, async () => {
        await fuzz(`RPC gRPC port ${protocol}`, 200, rpcCase(protocol), async (c) => {
          const answer = await viaHttp2(session, c);
          if (answer) checkRpc(c, "grpc", answer);
        });
      });
    }
    // Still serving, the same catalogue, on both ports.
    const after = await books.books({});
    assert.deepEqual(after, before);
    const check = await viaHttp2(session, {
      protocol: "connect",
      method: "POST",
      path: "/books.v1.BooksService/books",
      headers: { "content-type": "application/json" },
      body: new TextEncoder().encode("{}"),
    });
    assert.equal(check?.status, 200);
    assert.equal(JSON.parse(new TextDecoder().decode(check!.body)).book.length, before.book.length);
  } finally {
    await server.close();
  }
});
