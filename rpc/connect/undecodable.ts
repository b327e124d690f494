import { Buffer } from "node:buffer";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { type HandlerCall, wrapHandlers } from "./wrap_handlers.ts";

// Connect-ES's wording for input it cannot read: an undecodable message, a compressed envelope
// without an encoding or with bytes that do not decompress.
const CLIENT_INPUT_FAILURE =
  /^(?:parse binary: |received compressed envelope, but do not know how to decompress|decompression failed|invalid envelope)/;
const INTERNAL = "13";
const INVALID_ARGUMENT = "3";
const GRPC_WEB_TRAILER_FLAG = 0x80;
// Connect error bodies are a few hundred bytes; a body larger than this is not one to rewrite.
const MAX_ERROR_BODY = 64 * 1024;

/**
 * Registers `routes`, then makes every handler answer a request whose body it cannot read (not a
 * protobuf message, a compressed envelope without `grpc-encoding`, bytes that do not
 * decompress) with INVALID_ARGUMENT instead of INTERNAL, on every protocol: Connect (HTTP 400,
 * not 500), gRPC (trailer or trailers-only status) and gRPC-Web (the trailer frame).
 *
 * Why: Connect-ES reports such input as INTERNAL, while it was the client's mistake: a client
 * error is never INTERNAL or a 500 here (grpc-go answers INTERNAL; the fuzz suite holds us to
 * the stricter rule, docs/fuzzing.md). The reading happens in Connect's protocol handler before
 * any interceptor, so the answer is rewritten on its way out; for unary calls it is complete
 * (status set, no message) by the time the handler resolves.
 */
export function withUndecodableAsInvalidArgument(
  routes: (router: ConnectRouter) => void,
): (router: ConnectRouter) => void {
  return wrapHandlers(routes, undecodableAsInvalidArgument);
}

function undecodableAsInvalidArgument(handler: UniversalHandler): HandlerCall {
  return async (request) => {
    const response = await handler(request);
    if (response.status === 500) return await rewriteParseFailure(response);
    const trailer = response.trailer;
    if (trailer !== undefined) {
      // gRPC: the status is in the trailer, final once the body is sent (streams fail late).
      fixGrpcTrailer(trailer);
      if (response.body === undefined) return response;
      return { ...response, body: afterBody(response.body, () => fixGrpcTrailer(trailer)) };
    }
    const type = response.header?.get("content-type") ?? "";
    if (type.startsWith("application/grpc-web") && response.body !== undefined) {
      return { ...response, body: rewriteGrpcWebTrailer(response.body) };
    }
    return response;
  };
}

async function rewriteParseFailure(
  response: UniversalServerResponse,
): Promise<UniversalServerResponse> {
  const type = response.header?.get("content-type") ?? "";
  if (
    !type.startsWith("application/json") || response.header?.has("content-encoding") ||
    response.body === undefined
  ) {
    return response;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const rest = response.body[Symbol.asyncIterator]();
  for (let next = await rest.next(); !next.done; next = await rest.next()) {
    chunks.push(next.value);
    size += next.value.byteLength;
    if (size > MAX_ERROR_BODY) {
      // Not a Connect error body: passed on as it came.
      return {
        ...response,
        body: (async function* () {
          yield* chunks;
          for (let more = await rest.next(); !more.done; more = await rest.next()) {
            yield more.value;
          }
        })(),
      };
    }
  }
  const bytes = Buffer.concat(chunks);
  let error: { code?: unknown; message?: unknown } | undefined;
  try {
    error = JSON.parse(bytes.toString());
  } catch {
    error = undefined;
  }
  const rewrite = error?.code === "internal" && typeof error.message === "string" &&
    CLIENT_INPUT_FAILURE.test(error.message);
  const body = rewrite
    ? new TextEncoder().encode(JSON.stringify({ ...error, code: "invalid_argument" }))
    : bytes;
  const header = new Headers(response.header);
  header.set("content-length", String(body.byteLength));
  return {
    ...response,
    status: rewrite ? 400 : response.status,
    header,
    body: (async function* () {
      yield body;
    })(),
  };
}

function isClientInputFailure(encoded: string | null | undefined): boolean {
  if (!encoded) return false;
  let message = encoded;
  try {
    message = decodeURIComponent(encoded);
  } catch { /* not percent-encoded */ }
  return CLIENT_INPUT_FAILURE.test(message);
}

function fixGrpcTrailer(trailer: Headers): void {
  if (
    trailer.get("grpc-status") === INTERNAL && isClientInputFailure(trailer.get("grpc-message"))
  ) {
    trailer.set("grpc-status", INVALID_ARGUMENT);
  }
}

async function* afterBody(
  body: AsyncIterable<Uint8Array>,
  done: () => void,
): AsyncIterable<Uint8Array> {
  yield* body;
  done();
}

/**
 * gRPC-Web sends its status in a trailer frame at the end of the body. Connect writes whole
 * frames per chunk, so a chunk is walked frame by frame and only its trailer frame is rewritten.
 */
async function* rewriteGrpcWebTrailer(
  body: AsyncIterable<Uint8Array>,
): AsyncIterable<Uint8Array> {
  for await (const chunk of body) yield fixGrpcWebTrailer(chunk);
}

function fixGrpcWebTrailer(chunk: Uint8Array): Uint8Array {
  const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  for (let at = 0; at + 5 <= chunk.byteLength;) {
    const length = view.getUint32(at + 1);
    const end = at + 5 + length;
    if (end > chunk.byteLength) return chunk;
    if (chunk[at] === GRPC_WEB_TRAILER_FLAG) {
      const text = new TextDecoder().decode(chunk.subarray(at + 5, end));
      const status = /^grpc-status:\s*(\d+)\r?$/im.exec(text)?.[1];
      const message = /^grpc-message:\s*(.*?)\r?$/im.exec(text)?.[1];
      if (status !== INTERNAL || !isClientInputFailure(message)) return chunk;
      const fixed = new TextEncoder().encode(
        text.replace(/^grpc-status:\s*13/im, `grpc-status: ${INVALID_ARGUMENT}`),
      );
      const out = new Uint8Array(at + 5 + fixed.byteLength + (chunk.byteLength - end));
      out.set(chunk.subarray(0, at));
      out[at] = GRPC_WEB_TRAILER_FLAG;
      new DataView(out.buffer).setUint32(at + 1, fixed.byteLength);
      out.set(fixed, at + 5);
      out.set(chunk.subarray(end), at + 5 + fixed.byteLength);
      return out;
    }
    at = end;
  }
  return chunk;
}

/**
 * Connect's request gate (runs before the request is read): a Connect GET whose `message` is
 * not base64 though `base64=1` says so is INVALID_ARGUMENT. Connect-ES decodes it with a plain
 * Error, which it reports as INTERNAL (HTTP 500).
 */
export function refuseUndecodableQuery(context: HandlerContext): void {
  if (context.requestMethod !== "GET") return;
  const query = new URL(context.url).searchParams;
  if (query.get("base64") !== "1") return;
  try {
    base64Decode(query.get("message") ?? "");
  } catch {
    throw new ConnectError(
      "the message query parameter is not base64 (base64=1)",
      Code.InvalidArgument,
    );
  }
}
