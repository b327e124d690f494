/**
 * Property-based fuzzing of the RPC protocols over real sockets (docs/fuzzing.md): Connect and
 * gRPC-Web on both ports, native gRPC on the gRPC listener. Every answer: no 5xx (but a
 * deadline the client asked for), no INTERNAL or UNKNOWN status, no internals in a message,
 * the error shape of its protocol, and every RPC error (Connect's own refusals too) names its
 * catalogue code in a google.rpc.ErrorInfo and the `error-code` metadata; the server keeps
 * serving and the catalogue is unchanged.
 * With authentication on, a call the gate refuses gets exactly that refusal whatever its body
 * (undecodable, compressed, truncated), content type, deadline or port: nothing is decoded first.
 */
import assert from "node:assert/strict";
import type http2 from "node:http2";
import fc from "fast-check";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { BooksService } from "../../rpc/gen/books/v1/books_pb.ts";
import { ErrorInfoSchema } from "../../rpc/gen/google/rpc/error_details_pb.ts";
import { ERROR_DEFINITIONS } from "../../lib/errors.ts";
import {
  assertDetailedErrorBody,
  assertNoInternals,
  CONNECT_CLIENT_CODES,
  fuzz,
  isClientGrpcStatus,
} from "../support/fuzz.ts";
import { type RpcCase, rpcCase, type RpcProtocol } from "../support/fuzz_rpc.ts";
import { h2Request } from "../support/raw_http.ts";
import { grpcWebTrailer, rawSession, rpcErrorOf } from "../support/rpc_clients.ts";
import { startTestServer } from "../support/server.ts";
import { BOOKS_PATH } from "../support/requests.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

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

/**
 * Every RPC error names its catalogue code (docs/errors.md): a google.rpc.ErrorInfo of the
 * server's domain whose reason is a catalogue code, the same as its `error-code` metadata.
 */
function assertErrorInfo(a: Answer, where: string, seen?: Map<string, number>): void {
  const found = rpcErrorOf(a);
  if (found === undefined) return;
  const infos = found.error.findDetails(ErrorInfoSchema);
  const said = `${where}: ${found.error.code} "${found.error.rawMessage}"`;
  assert.equal(infos.length, 1, `${said} has ${infos.length} ErrorInfo`);
  const info = infos[0]!;
  assert.equal(info.domain, "books-and-addresses", said);
  assert.ok(Object.hasOwn(ERROR_DEFINITIONS, info.reason), `${said}: reason ${info.reason}`);
  assert.equal(found.errorCode, info.reason, `${said}: error-code metadata`);
  const kind = `${Code[found.error.code]} ${info.reason}`;
  seen?.set(kind, (seen.get(kind) ?? 0) + 1);
}

/** Checks one answer against the invariants. */
function checkRpc(c: RpcCase, port: string, a: Answer, seen: Map<string, number>): void {
  const where = `${port} ${c.protocol} ${c.method} ${c.path} ${
    c.headers["content-type"] ?? ""
  } -> ${a.status}`;
  assertErrorInfo(a, where, seen);
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
    // The errors seen, by status and ErrorInfo reason: the classes the run reached.
    const seen = new Map<string, number>();
    const protocols: RpcProtocol[] = ["connect", "grpc-web"];
    for (const protocol of protocols) {
      await t.step(`HTTP port, ${protocol}`, async () => {
        await fuzz(`RPC HTTP port ${protocol}`, 200, rpcCase(protocol), async (c) => {
          const answer = await viaFetch(server.httpUrl, c);
          if (answer) checkRpc(c, "http", answer, seen);
        });
      });
    }
    for (const protocol of ["connect", "grpc-web", "grpc"] as RpcProtocol[]) {
      await t.step(`gRPC port, ${protocol}`, async () => {
        await fuzz(`RPC gRPC port ${protocol}`, 200, rpcCase(protocol), async (c) => {
          const answer = await viaHttp2(session, c);
          if (answer) checkRpc(c, "grpc", answer, seen);
        });
      });
    }
    console.log(`RPC errors by status and reason: ${JSON.stringify(Object.fromEntries(seen))}`);
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

/** Paths the gate refuses without a token (AUTH_BOOKS=required; no service declares the rest). */
const GATED_PATHS = fc.constantFrom(
  BOOKS_PATH,
  BOOKS_PATH,
  "/books.v1.BooksService/Books",
  "/books.v1.BooksService/unknown",
  "/nope.Service/method",
  `${BOOKS_PATH}/`,
);

type Caller = "none" | "garbage" | "scopeless" | "fresh scopeless";

/**
 * The refusal an answer carries, as a gRPC code: `grpc-status` (headers, trailers, gRPC-Web
 * trailer frame), Connect's error (unary JSON or end-of-stream message), the REST error body, or
 * a plain answer's HTTP status; undefined when the answer is no refusal.
 */
function refusalOf(a: Answer): string | undefined {
  const type = (a.headers.get("content-type") ?? "").toLowerCase();
  const status = a.headers.get("grpc-status") ?? a.trailers.get("grpc-status") ??
    (type.startsWith("application/grpc-web")
      ? grpcWebTrailer(type, a.body)?.get("grpc-status")
      : undefined);
  if (status) return a.status === 200 ? status : `${status} with HTTP ${a.status}`;
  const byName: Record<string, string> = {
    unauthenticated: "16",
    unauthorized: "16",
    permission_denied: "7",
    forbidden: "7",
  };
  let text = new TextDecoder().decode(a.body);
  if (type.startsWith("application/connect+") && a.body[0] === 2) text = text.slice(5);
  try {
    const body = JSON.parse(text);
    const name = body.code ?? body.error?.code ?? body.errors?.[0]?.error;
    return byName[name] ?? `${name} with HTTP ${a.status}`;
  } catch {
    return { 401: "16", 403: "7" }[a.status] ?? `HTTP ${a.status}: ${text.slice(0, 100)}`;
  }
}

Deno.test("RPC fuzz: a refused call gets its refusal whatever its body, framing and port", async (t) => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET, AUTH_BOOKS: "required" });
  const session = rawSession(server.grpcUrl!);
  const scopeless = `Bearer ${await hsToken({ sub: "nobody", scope: "" })}`;
  const authorization = async (caller: Caller): Promise<Record<string, string>> => {
    switch (caller) {
      case "none":
        return {};
      case "garbage":
        return { authorization: "Bearer a.b.c" };
      case "scopeless":
        return { authorization: scopeless };
      case "fresh scopeless":
        // Not seen before: the call waits, unread, while the token is verified.
        return {
          authorization: `Bearer ${await hsToken({ sub: crypto.randomUUID(), scope: "" })}`,
        };
    }
  };
  const refusedCase = (protocol: RpcProtocol) =>
    fc.record({
      caller: fc.constantFrom<Caller>("none", "garbage", "scopeless", "fresh scopeless"),
      c: rpcCase(protocol, GATED_PATHS),
    }).map(({ caller, c }) =>
      // A valid token reaches an unknown method (any token will do there): books only.
      caller.endsWith("scopeless")
        ? { caller, c: { ...c, path: c.path.replace(/^[^?]*/, BOOKS_PATH) } }
        : { caller, c }
    );
  const seen: Record<string, number> = {};
  const check = (port: string, caller: Caller, c: RpcCase, answer: Answer | undefined) => {
    if (answer === undefined) return;
    const expected = caller.endsWith("scopeless") ? "7" : "16";
    const got = refusalOf(answer);
    const where = `${port} ${c.protocol} ${c.method} ${c.path} ${
      c.headers["content-type"] ?? ""
    } (${caller})`;
    assert.equal(got, expected, `${where}: ${new TextDecoder().decode(answer.body).slice(0, 200)}`);
    assertErrorInfo(answer, where);
    seen[`${port} ${c.protocol}`] = (seen[`${port} ${c.protocol}`] ?? 0) + 1;
  };
  try {
    const ports: [string, RpcProtocol[], (c: RpcCase) => Promise<Answer | undefined>][] = [
      ["HTTP port", ["connect", "grpc-web"], (c) => viaFetch(server.httpUrl, c)],
      ["gRPC port", ["connect", "grpc-web", "grpc"], (c) => viaHttp2(session, c)],
    ];
    for (const [port, protocols, send] of ports) {
      for (const protocol of protocols) {
        await t.step(`${port}, ${protocol}`, async () => {
          await fuzz(`refused RPC ${port} ${protocol}`, 100, refusedCase(protocol), async (r) => {
            const auth = await authorization(r.caller);
            const answer = await send({ ...r.c, headers: { ...r.c.headers, ...auth } });
            check(port, r.caller, r.c, answer);
          });
        });
      }
    }
    console.log(`refused RPC answers: ${JSON.stringify(seen)}`);
  } finally {
    await server.close();
  }
  assert.deepEqual(server.logs.filter((l) => l.msg === "unhandled error"), []);
});
