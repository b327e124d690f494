/**
 * The RPC clients socket tests call a server with: Connect-ES transports (Connect, gRPC-Web and
 * gRPC) on either port, @grpc/grpc-js, and bare node:http2 sessions.
 *
 * Every HTTP/2 client made here is closed before the server it talks to stops: Deno 2.9.6's
 * node:http2 client can crash the whole test process (SIGSEGV) when a server shuts down under an
 * idle client session. Each client is registered under its server's origin, and the helpers that
 * stop a server (tests/support/server.ts, served.ts) call `closeClientsOf` first, so a test
 * cannot forget. Each is also Disposable, for a `using` of its own where it lives shorter.
 */
import http2 from "node:http2";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { Buffer } from "node:buffer";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import { endStreamFromJson, errorFromJsonBytes } from "@connectrpc/connect/protocol-connect";
import { type ErrorInfo, ErrorInfoSchema } from "../../rpc/gen/google/rpc/error_details_pb.ts";
import { BooksService } from "../../rpc/gen/books/v1/books_pb.ts";
import { AddressService } from "../../rpc/gen/addresses/v1/addresses_pb.ts";

type Close = () => unknown;

/** Open clients by the origin of the server they talk to. */
const open = new Map<string, Set<Close>>();

function track(url: string, close: Close): Close {
  const origin = new URL(url).origin;
  let closers = open.get(origin);
  if (closers === undefined) open.set(origin, closers = new Set());
  let done = false;
  const once = () => {
    if (done) return;
    done = true;
    open.get(origin)?.delete(once);
    return close();
  };
  closers.add(once);
  return once;
}

/** Closes every client this module made for the servers at `urls` (before they stop). */
export async function closeClientsOf(...urls: (string | undefined)[]): Promise<void> {
  for (const url of urls) {
    if (url === undefined) continue;
    const closers = open.get(new URL(url).origin);
    for (const close of [...closers ?? []]) await close();
  }
}

/** Connect-ES's HTTP/2 session to `url`, closed before that server stops. */
type Session = Http2SessionManager & Disposable;

export function http2Session(
  url: string,
  // node:http2 hands socket options (a client address to connect from) on to net.connect.
  options?: (http2.ClientSessionOptions | http2.SecureClientSessionOptions) & {
    localAddress?: string;
  },
): Session {
  const manager = new Http2SessionManager(url, undefined, options);
  const close = track(url, () => manager.abort());
  return Object.assign(manager, { [Symbol.dispose]: close });
}

/**
 * A session that stays open while its server shuts down, for the tests of what a client sees
 * then; it is not closed by the server's stop, so the test holds it with `using`.
 */
export function sessionThroughShutdown(url: string): Session {
  const manager = new Http2SessionManager(url);
  return Object.assign(manager, { [Symbol.dispose]: () => manager.abort() });
}

/** A bare node:http2 session (for requests written by hand), closed before its server stops. */
export type RawSession = http2.ClientHttp2Session & Disposable;

export function rawSession(url: string): RawSession {
  const session = http2.connect(url);
  session.on("error", () => {});
  const close = track(url, () =>
    session.destroyed ? undefined : new Promise<void>((resolve) => {
      session.once("close", () => resolve());
      session.close();
    }));
  return Object.assign(session, { [Symbol.dispose]: () => void close() });
}

/** Native gRPC (always HTTP/2) on the gRPC listener. */
export function grpcTransport(url: string, session: Session = http2Session(url)): Transport {
  return createGrpcTransport({ baseUrl: url, sessionManager: session });
}

/** gRPC-Web: HTTP/1.1 on the main port, HTTP/2 on the gRPC listener. */
export function grpcWebTransport(
  url: string,
  httpVersion: "1.1" | "2",
  session?: Session,
): Transport {
  if (httpVersion === "1.1") return createGrpcWebTransport({ baseUrl: url, httpVersion });
  // Without response compression: Deno 2.9.6's node:http2 *client* reports a premature close
  // when it decompresses slowly (nodejs/node#65677); the server is not involved.
  return createGrpcWebTransport({
    baseUrl: url,
    httpVersion,
    sessionManager: session ?? http2Session(url),
    acceptCompression: [],
  });
}

/** The Connect protocol, binary unless `json`. */
export function connectTransport(
  url: string,
  httpVersion: "1.1" | "2",
  options: { json?: boolean; session?: Session } = {},
): Transport {
  const format = options.json ? { useBinaryFormat: false } : {};
  if (httpVersion === "1.1") {
    return createConnectTransport({ baseUrl: url, httpVersion, ...format });
  }
  return createConnectTransport({
    baseUrl: url,
    httpVersion,
    sessionManager: options.session ?? http2Session(url),
    ...format,
  });
}

/** Every Connect-ES transport to a server with both listeners, named by protocol and port. */
export function everyTransport(server: { httpUrl: string; grpcUrl?: string }): [
  string,
  Transport,
][] {
  const grpcUrl = server.grpcUrl!;
  return [
    ["gRPC (gRPC port)", grpcTransport(grpcUrl)],
    ["gRPC-Web (gRPC port)", grpcWebTransport(grpcUrl, "2")],
    ["Connect (gRPC port)", connectTransport(grpcUrl, "2")],
    ["Connect (HTTP port)", connectTransport(server.httpUrl, "1.1")],
    ["Connect JSON (HTTP port)", connectTransport(server.httpUrl, "1.1", { json: true })],
    ["gRPC-Web (HTTP port)", grpcWebTransport(server.httpUrl, "1.1")],
  ];
}

/** BooksService over a transport. */
export function booksClient(transport: Transport) {
  return createClient(BooksService, transport);
}

/** AddressService over a transport. */
export function addressClient(transport: Transport) {
  return createClient(AddressService, transport);
}

/** The error a call failed with; the test fails if it succeeds. */
export async function rpcFailure(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("the call should have failed");
}

/** The google.rpc.ErrorInfo of a failure (its `reason` is the REST error code). */
export function errorInfo(error: ConnectError): ErrorInfo | undefined {
  return error.findDetails(ErrorInfoSchema)[0];
}

/** The code of one books call with `headers` (0 when it succeeds); 5 s at most. */
export async function booksCode(
  transport: Transport,
  headers: Record<string, string> = {},
): Promise<Code | 0> {
  try {
    await booksClient(transport).books({}, { timeoutMs: 5000, headers });
    return 0;
  } catch (error) {
    return ConnectError.from(error).code;
  }
}

const PROTO_DIR = new URL("../../rpc/proto/", import.meta.url).pathname;

/** A .proto file of rpc/proto/ as @grpc/proto-loader reads it (field names as written). */
export function protoDefinition(
  file: string,
  options: protoLoader.Options = {},
): protoLoader.PackageDefinition {
  return protoLoader.loadSync(`${PROTO_DIR}${file}`, {
    includeDirs: [PROTO_DIR],
    keepCase: true,
    ...options,
  });
}

// deno-lint-ignore no-explicit-any
export type GrpcJsClient = grpc.Client & Record<string, any>;

/**
 * A @grpc/grpc-js client of `service` (a path in `definition`; BooksService of books.proto by
 * default, `[]` for a bare grpc.Client) at `url`, closed before that server stops.
 */
export function grpcJsClient(url: string, options: {
  definition?: protoLoader.PackageDefinition;
  service?: string[];
  credentials?: grpc.ChannelCredentials;
  /** host:port to dial, when not that of `url` (a certificate's name). */
  target?: string;
} = {}): GrpcJsClient & Disposable {
  const target = options.target ?? new URL(url).host;
  const credentials = options.credentials ?? grpc.credentials.createInsecure();
  const service = options.service ?? ["books", "v1", "BooksService"];
  let client: GrpcJsClient;
  if (service.length === 0) client = new grpc.Client(target, credentials) as GrpcJsClient;
  else {
    // deno-lint-ignore no-explicit-any
    let ctor: any = grpc.loadPackageDefinition(
      options.definition ?? protoDefinition("books/v1/books.proto", { defaults: true }),
    );
    for (const part of service) ctor = ctor[part];
    client = new ctor(target, credentials);
  }
  const close = track(url, () => client.close());
  return Object.assign(client, { [Symbol.dispose]: close });
}

/** What a grpc-js unary call ended with: its code, and the metadata the client saw. */
export interface GrpcJsAnswer<T> {
  code: number;
  error: grpc.ServiceError | null;
  response: T | undefined;
  /** The response headers on success, the error's metadata on failure. */
  metadata: grpc.Metadata | undefined;
}

/**
 * The google.rpc.ErrorInfo of a failed grpc-js call, read from its `grpc-status-details-bin`
 * trailer (a google.rpc.Status, decoded as Connect-ES decodes it).
 */
export function grpcJsErrorInfo(answer: GrpcJsAnswer<unknown>): ErrorInfo | undefined {
  const details = answer.metadata?.get("grpc-status-details-bin")[0];
  if (details === undefined) return undefined;
  const trailer = new Headers({
    "grpc-status": String(answer.code),
    "grpc-status-details-bin": Buffer.from(details).toString("base64"),
  });
  return findTrailerError(trailer)?.findDetails(ErrorInfoSchema)[0];
}

/** One unary call of `method`; resolves whatever the status. */
export function grpcJsUnary<T = { book: unknown[] }>(
  client: GrpcJsClient,
  method: string,
  request: object = {},
  fields: Record<string, string> = {},
): Promise<GrpcJsAnswer<T>> {
  const metadata = new grpc.Metadata();
  for (const [name, value] of Object.entries(fields)) metadata.set(name, value);
  return new Promise((resolve) => {
    let headers: grpc.Metadata | undefined;
    const call = client[method](request, metadata, (error: grpc.ServiceError | null, res: T) => {
      resolve({
        code: error ? error.code : grpc.status.OK,
        error,
        response: error ? undefined : res,
        metadata: error ? error.metadata : headers,
      });
    });
    call.on("metadata", (m: grpc.Metadata) => (headers = m));
  });
}

/** The status and message of a gRPC-Web answer: its trailer frame (base64 for -text). */
export function grpcWebTrailer(type: string, body: Uint8Array): Headers | undefined {
  let bytes = body;
  if (type.startsWith("application/grpc-web-text")) {
    try {
      bytes = Uint8Array.from(
        atob(new TextDecoder().decode(body).replace(/=+(?=.)/g, "")),
        (ch) => ch.charCodeAt(0),
      );
    } catch {
      return undefined;
    }
  }
  for (let at = 0; at + 5 <= bytes.length;) {
    const length = new DataView(bytes.buffer, bytes.byteOffset + at + 1, 4).getUint32(0);
    if (bytes[at]! & 0x80) {
      const text = new TextDecoder().decode(bytes.subarray(at + 5, at + 5 + length));
      const out = new Headers();
      for (const line of text.split(/\r?\n/)) {
        const colon = line.indexOf(":");
        if (colon > 0) out.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
      }
      return out;
    }
    at += 5 + length;
  }
  return undefined;
}

/** An RPC answer as a raw client read it. */
export interface RpcAnswer {
  status: number;
  headers: Headers;
  trailers: Headers;
  body: Uint8Array;
}

/**
 * The RPC error an answer carries, read as clients read it (Connect-ES's own decoders): the gRPC
 * status fields (headers, trailers, the gRPC-Web trailer frame), Connect's unary JSON error, or
 * a Connect stream's end message; with the `error-code` metadata that came with it. Undefined
 * for an answer that is no RPC error (a success, a plain HTTP refusal).
 */
export function rpcErrorOf(
  a: RpcAnswer,
): { error: ConnectError; errorCode: string | null } | undefined {
  const type = (a.headers.get("content-type") ?? "").toLowerCase();
  if (type.startsWith("application/grpc")) {
    const fields = new Headers([...a.headers, ...a.trailers]);
    const web = type.startsWith("application/grpc-web") ? grpcWebTrailer(type, a.body) : undefined;
    for (const [name, value] of web ?? []) fields.set(name, value);
    const error = findTrailerError(fields);
    return error && { error, errorCode: fields.get("error-code") };
  }
  if (type.startsWith("application/connect+")) {
    for (let at = 0; at + 5 <= a.body.length;) {
      const end = at + 5 + new DataView(a.body.buffer, a.body.byteOffset + at + 1, 4).getUint32(0);
      if (a.body[at] === 2) {
        const { metadata, error } = endStreamFromJson(a.body.subarray(at + 5, end));
        return error && { error, errorCode: metadata.get("error-code") };
      }
      at = end;
    }
    return undefined;
  }
  if (type.startsWith("application/json") && a.status !== 200) {
    // REST's detailed body (a request in no RPC protocol) has no `code`.
    if (typeof JSON.parse(new TextDecoder().decode(a.body)).code !== "string") return undefined;
    const error = errorFromJsonBytes(a.body, undefined, new ConnectError("not a Connect error"));
    return { error, errorCode: a.headers.get("error-code") };
  }
  return undefined;
}
