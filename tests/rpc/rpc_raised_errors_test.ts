/**
 * The errors Connect raises itself, before any service reads a call (malformed JSON or protobuf,
 * an oversized message, a malformed deadline, a field mask path proto3 JSON refuses), carry a
 * google.rpc.ErrorInfo with their catalogue code like every other error (docs/grpc.md, "Errors
 * Connect raises itself"): over native gRPC (raw HTTP/2, Connect-ES and @grpc/grpc-js), Connect
 * and gRPC-Web, on both ports. Status and message stay Connect's.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as grpc from "@grpc/grpc-js";
import { Code, type Interceptor, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { MAX_MESSAGE_BYTES } from "../../rpc/connect/router.ts";
import { ErrorInfoSchema } from "../../rpc/gen/google/rpc/error_details_pb.ts";
import { h2Request } from "../support/raw_http.ts";
import { BOOKS_PATH as BOOKS } from "../support/requests.ts";
import {
  booksClient,
  errorInfo,
  grpcJsClient,
  grpcJsErrorInfo,
  http2Session,
  rawSession,
  rpcErrorOf,
  rpcFailure,
} from "../support/rpc_clients.ts";
import { startTestServer } from "../support/server.ts";

const UPDATE = "/addresses.v1.AddressService/UpdateAddress";
type Framing = "connect" | "grpc-web" | "grpc";

/** One kind of error Connect raises, and what each framing sends to provoke it. */
interface Case {
  name: string;
  path: string;
  status: Code;
  reason: string;
  field?: string;
  /** Content type, extra header fields and body per framing. */
  request(framing: Framing): { type: string; headers?: Record<string, string>; body: Uint8Array };
}

const text = (s: string) => new TextEncoder().encode(s);

function envelope(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + message.byteLength);
  new DataView(out.buffer).setUint32(1, message.byteLength);
  out.set(message, 5);
  return out;
}

/** The body of `framing`: the message as it is (Connect unary) or in its envelope. */
function bodyOf(framing: Framing, message: Uint8Array): Uint8Array {
  return framing === "connect" ? message : envelope(message);
}

function typeOf(framing: Framing, format: "proto" | "json"): string {
  return framing === "connect" ? `application/${format}` : `application/${framing}+${format}`;
}

const MASK_REQUEST = JSON.stringify({
  address: { id: "1", name: "x" },
  updateMask: "postal_code",
});
// A message that would parse (field 1, bytes), one byte over the limit.
const OVERSIZED = new Uint8Array(MAX_MESSAGE_BYTES + 1);

const CASES: Case[] = [
  {
    name: "malformed JSON",
    path: BOOKS,
    status: Code.InvalidArgument,
    reason: "invalid-body",
    request: (framing) => ({ type: typeOf(framing, "json"), body: bodyOf(framing, text("{")) }),
  },
  {
    name: "malformed protobuf",
    path: BOOKS,
    status: Code.InvalidArgument,
    reason: "invalid-body",
    request: (framing) => ({
      type: typeOf(framing, "proto"),
      body: bodyOf(framing, new Uint8Array([0x0a, 0xff])),
    }),
  },
  {
    name: "an oversized message",
    path: BOOKS,
    status: Code.ResourceExhausted,
    reason: "payload-too-large",
    request: (framing) => ({ type: typeOf(framing, "proto"), body: bodyOf(framing, OVERSIZED) }),
  },
  {
    name: "a malformed timeout",
    path: BOOKS,
    status: Code.InvalidArgument,
    reason: "invalid-parameter",
    request: (framing) => ({
      type: typeOf(framing, "proto"),
      headers: framing === "connect" ? { "connect-timeout-ms": "abc" } : { "grpc-timeout": "abc" },
      body: bodyOf(framing, new Uint8Array()),
    }),
  },
  {
    name: "a field mask path not lowerCamelCase",
    path: UPDATE,
    status: Code.InvalidArgument,
    reason: "invalid-parameter",
    request: (framing) => ({
      type: typeOf(framing, "json"),
      body: bodyOf(framing, text(MASK_REQUEST)),
    }),
  },
];

/** The field a timeout's ErrorInfo names: the header the framing sent. */
function fieldOf(c: Case, framing: Framing): string | undefined {
  if (c.name !== "a malformed timeout") return undefined;
  return framing === "connect" ? "connect-timeout-ms" : "grpc-timeout";
}

function assertCatalogued(
  answer: Parameters<typeof rpcErrorOf>[0],
  c: Case,
  framing: Framing,
  where: string,
): void {
  const found = rpcErrorOf(answer);
  assert.ok(found, `${where}: no RPC error (HTTP ${answer.status})`);
  assert.equal(found.error.code, c.status, `${where}: ${found.error.rawMessage}`);
  const infos = found.error.findDetails(ErrorInfoSchema);
  assert.equal(infos.length, 1, `${where}: ${found.error.rawMessage}`);
  assert.equal(infos[0]!.reason, c.reason, where);
  assert.equal(infos[0]!.domain, "books-and-addresses", where);
  assert.equal(infos[0]!.metadata.field, fieldOf(c, framing), where);
  assert.equal(found.errorCode, c.reason, `${where}: error-code metadata`);
  if (framing === "connect") {
    // Connect's HTTP status follows the gRPC code (docs/grpc.md).
    assert.equal(answer.status, c.status === Code.ResourceExhausted ? 429 : 400, where);
  } else {
    assert.equal(answer.status, 200, where);
  }
}

Deno.test("errors Connect raises itself carry their catalogue code in ErrorInfo, every framing and port", async (t) => {
  const server = await startTestServer();
  const session = rawSession(server.grpcUrl!);
  try {
    for (const c of CASES) {
      await t.step(c.name, async () => {
        for (const framing of ["connect", "grpc-web"] as const) {
          const { type, headers = {}, body } = c.request(framing);
          const res = await fetch(server.httpUrl + c.path, {
            method: "POST",
            headers: { "content-type": type, ...headers },
            body: body as Uint8Array<ArrayBuffer>,
          });
          const answer = {
            status: res.status,
            headers: res.headers,
            trailers: new Headers(),
            body: new Uint8Array(await res.arrayBuffer()),
          };
          assertCatalogued(answer, c, framing, `HTTP port ${framing}`);
        }
        for (const framing of ["connect", "grpc-web", "grpc"] as const) {
          const { type, headers = {}, body } = c.request(framing);
          const answer = await h2Request(session, {
            method: "POST",
            target: c.path,
            headers: { te: "trailers", "content-type": type, ...headers },
            body: Buffer.from(body),
          }, 10_000);
          assertCatalogued(answer, c, framing, `gRPC port ${framing}`);
        }
      });
    }
  } finally {
    await server.close();
  }
});

Deno.test("@grpc/grpc-js reads the catalogue code of Connect's own refusals", async () => {
  const server = await startTestServer();
  const client = grpcJsClient(server.grpcUrl!, { service: [] });
  const call = (request: Buffer) =>
    new Promise<{ code: number; metadata: grpc.Metadata | undefined }>((resolve) => {
      client.makeUnaryRequest(
        BOOKS,
        (b: Buffer) => b,
        (b: Buffer) => b,
        request,
        new grpc.Metadata(),
        {},
        (error) => resolve({ code: error?.code ?? 0, metadata: error?.metadata }),
      );
    });
  try {
    for (
      const [request, code, reason] of [
        [Buffer.from([0x0a, 0xff]), grpc.status.INVALID_ARGUMENT, "invalid-body"],
        [Buffer.from(OVERSIZED), grpc.status.RESOURCE_EXHAUSTED, "payload-too-large"],
      ] as const
    ) {
      const answer = await call(request);
      assert.equal(answer.code, code);
      const info = grpcJsErrorInfo({ ...answer, error: null, response: undefined });
      assert.equal(info?.reason, reason);
      assert.deepEqual(answer.metadata?.get("error-code"), [reason]);
    }
  } finally {
    await server.close();
  }
});

/** Sends every call with a malformed deadline header, as a misbehaving client might. */
const badTimeout: Interceptor = (next) => (req) => {
  const connect = req.header.has("connect-protocol-version") ||
    !(req.header.get("content-type") ?? "").startsWith("application/grpc");
  req.header.set(connect ? "connect-timeout-ms" : "grpc-timeout", "abc");
  return next(req);
};

Deno.test("Connect-ES clients read the catalogue code of a malformed timeout, every protocol", async () => {
  const server = await startTestServer();
  const grpcUrl = server.grpcUrl!;
  const interceptors = [badTimeout];
  const transports: [string, Transport, string][] = [
    [
      "gRPC",
      createGrpcTransport({
        baseUrl: grpcUrl,
        sessionManager: http2Session(grpcUrl),
        interceptors,
      }),
      "grpc-timeout",
    ],
    [
      "gRPC-Web (gRPC port)",
      createGrpcWebTransport({
        baseUrl: grpcUrl,
        httpVersion: "2",
        sessionManager: http2Session(grpcUrl),
        interceptors,
      }),
      "grpc-timeout",
    ],
    [
      "gRPC-Web (HTTP port)",
      createGrpcWebTransport({ baseUrl: server.httpUrl, httpVersion: "1.1", interceptors }),
      "grpc-timeout",
    ],
    [
      "Connect (HTTP port)",
      createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1", interceptors }),
      "connect-timeout-ms",
    ],
    [
      "Connect JSON (gRPC port)",
      createConnectTransport({
        baseUrl: grpcUrl,
        httpVersion: "2",
        sessionManager: http2Session(grpcUrl),
        useBinaryFormat: false,
        interceptors,
      }),
      "connect-timeout-ms",
    ],
  ];
  try {
    for (const [name, transport, field] of transports) {
      const error = await rpcFailure(booksClient(transport).books({}));
      assert.equal(error.code, Code.InvalidArgument, `${name}: ${error.rawMessage}`);
      assert.match(error.rawMessage, /invalid (grpc|connect) timeout/, name);
      const info = errorInfo(error);
      assert.equal(info?.reason, "invalid-parameter", name);
      assert.equal(info?.metadata.field, field, name);
      assert.equal(error.metadata.get("error-code"), "invalid-parameter", name);
    }
  } finally {
    await server.close();
  }
});

Deno.test("a stream's undecodable message (Connect's handler) carries its catalogue code, every framing", async () => {
  const server = await startTestServer();
  const session = rawSession(server.grpcUrl!);
  const watch = "/grpc.health.v1.Health/Watch";
  try {
    for (
      const [framing, type] of [
        ["grpc", "application/grpc"],
        ["grpc-web", "application/grpc-web+proto"],
        ["connect", "application/connect+proto"],
      ] as const
    ) {
      const answer = await h2Request(session, {
        method: "POST",
        target: watch,
        headers: { te: "trailers", "content-type": type },
        body: Buffer.from(envelope(new Uint8Array([0x0a, 0xff]))),
      }, 10_000);
      const found = rpcErrorOf(answer);
      assert.ok(found, `${framing}: no error`);
      assert.equal(found.error.code, Code.InvalidArgument, framing);
      assert.equal(errorInfo(found.error)?.reason, "invalid-body", framing);
      assert.equal(found.errorCode, "invalid-body", framing);
    }
  } finally {
    await server.close();
  }
});
