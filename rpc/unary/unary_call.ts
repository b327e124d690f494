import { Buffer } from "node:buffer";
import { Code, ConnectError, type ContextValues, type HandlerContext } from "@connectrpc/connect";
import {
  compressionNegotiate,
  encodeEnvelope,
  envelopeCompress,
  invokeUnaryImplementation,
  mergeNonProtocolHeaders,
} from "@connectrpc/connect/protocol";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { trailerFlag, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import {
  codeToHttpStatus,
  errorToJsonBytes,
  trailerMux,
} from "@connectrpc/connect/protocol-connect";
import type { UnaryMethod, UnaryOptions } from "./unary_methods.ts";
import { withErrorInfo } from "../connect/errors.ts";
// Longer deadlines are left to Connect, which rpc/connect/long_timeouts.ts makes unbounded.
import { grpcTimeoutMs, MAX_TIMER_MS } from "../connect/long_timeouts.ts";

/** The protocols the lean path speaks, named as Connect's handlers name them. */
export type Framing = "grpc" | "grpc-web" | "connect";

// The binary request types the lean path takes, exactly as clients send them, and the type
// Connect answers each with. Anything else (JSON, parameters, other spellings) goes to Connect.
const FRAMINGS: ReadonlyMap<string, { framing: Framing; responseType: string }> = new Map([
  ["application/grpc", { framing: "grpc", responseType: "application/grpc+proto" }],
  ["application/grpc+proto", { framing: "grpc", responseType: "application/grpc+proto" }],
  ["application/grpc-web", { framing: "grpc-web", responseType: "application/grpc-web+proto" }],
  [
    "application/grpc-web+proto",
    { framing: "grpc-web", responseType: "application/grpc-web+proto" },
  ],
  ["application/proto", { framing: "connect", responseType: "application/proto" }],
]);

/** What the headers of a call the lean path takes say, known before its body is read. */
export interface UnaryHead {
  framing: Framing;
  responseType: string;
  /** The deadline, from `grpc-timeout` or `connect-timeout-ms`; undefined for none. */
  timeoutMs: number | undefined;
  /** The compression the answer is sent with (the client's accept list), or null. */
  compression: ReturnType<typeof compressionNegotiate>["response"];
}

/**
 * Whether the lean path takes a POST with these headers (`header(name)`, lower-case names), and
 * how: a binary request in one of the three protocols, uncompressed, with a deadline a timer can
 * wait for. Undefined for everything else (compressed requests, JSON, Connect GET, malformed or
 * very long deadlines), which Connect's own handler answers.
 */
export function unaryHead(
  options: UnaryOptions,
  allowGrpc: boolean,
  header: (name: string) => string | null | undefined,
): UnaryHead | undefined {
  const type = FRAMINGS.get(header("content-type") ?? "");
  if (type === undefined || (type.framing === "grpc" && !allowGrpc)) return undefined;
  const connect = type.framing === "connect";
  const encoding = header(connect ? "content-encoding" : "grpc-encoding");
  if (encoding != null && encoding !== "identity") return undefined;
  let timeoutMs: number | undefined;
  const timeout = header(connect ? "connect-timeout-ms" : "grpc-timeout");
  if (timeout != null) {
    timeoutMs = connect ? connectTimeoutMs(timeout) : grpcTimeoutMs(timeout);
    if (timeoutMs === undefined || timeoutMs > MAX_TIMER_MS) return undefined;
  }
  const accept = header(connect ? "accept-encoding" : "grpc-accept-encoding") ?? null;
  const compression = accept === null || accept === "" ? null : compressionNegotiate(
    options.acceptCompression,
    null,
    accept,
    connect ? "accept-encoding" : "grpc-accept-encoding",
  ).response;
  return { ...type, timeoutMs, compression };
}

function connectTimeoutMs(value: string): number | undefined {
  return /^[0-9]{1,10}$/.test(value) ? Number(value) : undefined;
}

/**
 * The request message of a body the lean path read whole, or undefined when Connect must judge
 * it (no message, several, a compressed or flagged envelope, an incomplete one, too large, bytes
 * that do not parse): Connect's answer to those is an error, given by its own handler.
 */
export function requestMessage(
  method: UnaryMethod,
  framing: Framing,
  body: Uint8Array,
  readMaxBytes: number,
): unknown {
  let message = body;
  if (framing !== "connect") {
    if (body.byteLength < 5 || body[0] !== 0) return undefined;
    const length = new DataView(body.buffer, body.byteOffset, 5).getUint32(1);
    if (length !== body.byteLength - 5) return undefined;
    message = body.subarray(5);
  }
  if (message.byteLength > readMaxBytes) return undefined;
  try {
    return method.input.parse(message);
  } catch {
    return undefined;
  }
}

/** A call's answer as its protocol puts it on the wire. */
export interface UnaryAnswer {
  status: number;
  header: Headers;
  /** The body; a Buffer, so node:http2 writes it without wrapping it again. */
  body: Buffer | undefined;
  /** HTTP trailers (gRPC only). */
  trailer: Headers | undefined;
}

/** What a call brings besides its message. */
export interface UnaryCall {
  head: UnaryHead;
  url: string;
  requestHeader: Headers;
  values: ContextValues;
  signal: AbortSignal;
}

/**
 * Runs one unary call the way Connect's protocol handlers do, without their streaming pipeline:
 * a handler context, the interceptors and the service's function (Connect's own
 * `invokeUnaryImplementation`), then the answer or the error encoded as Connect encodes it for
 * the call's protocol (status, headers, trailers, body, compression). The deadline is the
 * context's (`signal`, `timeoutMs()`); as in Connect, it aborts the signal and the function
 * decides what that means.
 */
export async function answerUnary(
  method: UnaryMethod,
  options: UnaryOptions,
  call: UnaryCall,
  input: unknown,
): Promise<UnaryAnswer> {
  const { framing, responseType, compression, timeoutMs } = call.head;
  const responseHeader = new Headers();
  responseHeader.set("content-type", responseType);
  const responseTrailer = new Headers();
  if (framing !== "connect") {
    responseTrailer.set("grpc-status", "0");
    if (compression) responseHeader.set("grpc-encoding", compression.name);
  }
  // Whole milliseconds, as Connect's handler context keeps it (a Date): a deadline under 1 ms
  // (`grpc-timeout: 1n`) has passed when the call starts, on either path.
  const deadline = timeoutMs === undefined ? undefined : Math.trunc(Date.now() + timeoutMs);
  const context: HandlerContext = {
    method: method.spec.method,
    service: method.spec.method.parent,
    requestMethod: "POST",
    protocolName: framing,
    url: call.url,
    signal: call.signal,
    timeoutMs: deadline === undefined ? noDeadline : () => deadline - Date.now(),
    requestHeader: call.requestHeader,
    responseHeader,
    responseTrailer,
    values: call.values,
  };
  let bytes: Uint8Array;
  let frame: Buffer | undefined;
  try {
    const output = await invokeUnaryImplementation(
      method.spec,
      context,
      input as never,
      options.interceptors,
    );
    ({ bytes, frame } = encoded(method, output));
  } catch (e) {
    return errorAnswer(options, call.head, context, asConnectError(e));
  }
  if (framing === "connect") {
    let body = bytes;
    if (compression && body.byteLength >= options.compressMinBytes) {
      body = await compression.compress(body);
      responseHeader.set("content-encoding", compression.name);
    }
    return connectAnswer(200, responseHeader, responseTrailer, body);
  }
  if (framing === "grpc-web" && !compression && isOkAlone(responseTrailer)) {
    return { status: 200, header: responseHeader, body: withOkTrailer(bytes), trailer: undefined };
  }
  const message = compression
    ? await enveloped(bytes, 0, compression, options.compressMinBytes)
    : frame ?? toBuffer(encodeEnvelope(0, bytes));
  if (framing === "grpc") {
    return { status: 200, header: responseHeader, body: message, trailer: responseTrailer };
  }
  const trailer = await enveloped(
    trailerSerialize(responseTrailer),
    trailerFlag,
    compression,
    options.compressMinBytes,
  );
  return {
    status: 200,
    header: responseHeader,
    body: Buffer.concat([message, trailer]),
    trailer: undefined,
  };
}

function noDeadline(): undefined {
  return undefined;
}

/** What Connect's handlers make of anything thrown: a ConnectError as it is, else INTERNAL. */
function asConnectError(e: unknown): ConnectError {
  return e instanceof ConnectError
    ? e
    : new ConnectError("internal error", Code.Internal, undefined, undefined, e);
}

async function errorAnswer(
  options: UnaryOptions,
  head: UnaryHead,
  context: HandlerContext,
  raised: ConnectError,
): Promise<UnaryAnswer> {
  const { responseHeader, responseTrailer } = context;
  // Every error names its catalogue code, Connect's own too (the deadline's, as Connect raises it).
  const error = withErrorInfo(raised);
  if (head.framing === "grpc") {
    setTrailerStatus(responseTrailer, error);
    return { status: 200, header: responseHeader, body: undefined, trailer: responseTrailer };
  }
  if (head.framing === "grpc-web") {
    setTrailerStatus(responseTrailer, error);
    const trailer = await enveloped(
      trailerSerialize(responseTrailer),
      trailerFlag,
      head.compression,
      options.compressMinBytes,
    );
    return { status: 200, header: responseHeader, body: trailer, trailer: undefined };
  }
  responseHeader.set("content-type", "application/json");
  if (!error.isWireError) mergeNonProtocolHeaders(responseHeader, error.metadata);
  let body: Uint8Array = errorToJsonBytes(error, options.jsonOptions);
  if (head.compression && body.byteLength >= options.compressMinBytes) {
    body = await head.compression.compress(body);
    responseHeader.set("content-encoding", head.compression.name);
  }
  return connectAnswer(codeToHttpStatus(error.code), responseHeader, responseTrailer, body);
}

function connectAnswer(
  status: number,
  responseHeader: Headers,
  responseTrailer: Headers,
  body: Uint8Array,
): UnaryAnswer {
  // trailerMux copies the headers to add `trailer-` fields; without trailers it would copy alone.
  const header = isEmpty(responseTrailer)
    ? responseHeader
    : trailerMux(responseHeader, responseTrailer);
  header.set("content-length", body.byteLength.toString(10));
  return { status, header, body: toBuffer(body), trailer: undefined };
}

// The trailer frame of a gRPC-Web call answered OK with no trailers of its own, as
// trailerSerialize and encodeEnvelope write it: the same bytes for every such call.
const OK_TRAILER = encodeEnvelope(trailerFlag, new TextEncoder().encode("grpc-status: 0\r\n"));

/** True when a call's trailers are the OK status alone (no service added any). */
function isOkAlone(trailer: Headers): boolean {
  let count = 0;
  for (const [name, value] of trailer) {
    if (++count > 1 || name !== "grpc-status" || value !== "0") return false;
  }
  return count === 1;
}

/** An uncompressed gRPC-Web body: the message's frame, then the OK trailer frame. */
function withOkTrailer(bytes: Uint8Array): Buffer {
  const body = Buffer.allocUnsafe(5 + bytes.byteLength + OK_TRAILER.byteLength);
  body[0] = 0;
  body.writeUInt32BE(bytes.byteLength, 1);
  body.set(bytes, 5);
  body.set(OK_TRAILER, 5 + bytes.byteLength);
  return body;
}

function isEmpty(headers: Headers): boolean {
  for (const _ of headers.keys()) return false;
  return true;
}

async function enveloped(
  data: Uint8Array,
  flags: number,
  compression: UnaryHead["compression"],
  compressMinBytes: number,
): Promise<Buffer> {
  const envelope = await envelopeCompress({ data, flags }, compression, compressMinBytes);
  return toBuffer(encodeEnvelope(envelope.flags, envelope.data));
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

// Encodings of answers that cannot change (frozen messages, such as the catalogue's), by the
// message's identity: encoded and framed once, however many calls answer with them.
const frozenEncodings = new WeakMap<object, { bytes: Uint8Array; frame: Buffer }>();

/**
 * The answer's protobuf bytes (Connect's serializer, with its size limit), and for a frozen
 * message also its uncompressed frame, both kept for the next call that answers it.
 */
function encoded(method: UnaryMethod, output: object): { bytes: Uint8Array; frame?: Buffer } {
  if (!Object.isFrozen(output)) return { bytes: method.output.serialize(output as never) };
  let known = frozenEncodings.get(output);
  if (known === undefined) {
    const bytes = method.output.serialize(output as never);
    known = { bytes, frame: toBuffer(encodeEnvelope(0, bytes)) };
    frozenEncodings.set(output, known);
  }
  return known;
}
