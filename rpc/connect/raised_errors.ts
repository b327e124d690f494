import { Buffer } from "node:buffer";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { findTrailerError, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { trailerFlag, trailerParse, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import {
  codeToHttpStatus,
  endStreamFlag,
  endStreamFromJson,
  endStreamToJson,
  errorFromJsonBytes,
  errorToJsonBytes,
} from "@connectrpc/connect/protocol-connect";
import { AppError } from "../../lib/errors.ts";
import { appConnectError, ERROR_CODE_TRAILER, withErrorInfo } from "./errors.ts";
import { type HandlerCall, wrapHandlers } from "./wrap_handlers.ts";

// Connect error bodies are a few hundred bytes; a body larger than this is not one to rewrite.
const MAX_ERROR_BODY = 64 * 1024;
const NOT_AN_ERROR = new ConnectError("not a Connect error", Code.Unknown);

/**
 * Registers `routes`, then rewrites the errors Connect's handlers raise themselves, before any
 * interceptor sees the call (a body that is not the method's message, an oversized message, a
 * malformed deadline, an unknown compression, a field mask path Connect's JSON refuses), on
 * every protocol: Connect (the unary JSON error, a stream's end message), gRPC (trailer or
 * trailers-only status) and gRPC-Web (the trailer frame).
 *
 * - Each gets a `google.rpc.ErrorInfo` and the `error-code` metadata with its catalogue code
 *   (./raised_error_codes.ts), as the service's own errors carry (./errors.ts): a client reads
 *   every error's code the same way. Status and message stay Connect's.
 * - A body Connect cannot read is INVALID_ARGUMENT (Connect: HTTP 400), not INTERNAL (500):
 *   Connect-ES reports such input as INTERNAL, while it was the client's mistake, and a client
 *   error is never INTERNAL or a 500 here (grpc-go answers INTERNAL; the fuzz suite holds us to
 *   the stricter rule, docs/fuzzing.md).
 *
 * The answer is rewritten on its way out; a unary call's is complete (status set, no message) by
 * the time the handler resolves, a stream's status comes once its body is sent. Answers that
 * carry `error-code` already (the service's errors) are passed on unread where the field is in
 * the headers or trailers.
 */
export function withRaisedErrorsMapped(
  routes: (router: ConnectRouter) => void,
): (router: ConnectRouter) => void {
  return wrapHandlers(routes, mapRaisedErrors);
}

function mapRaisedErrors(handler: UniversalHandler): HandlerCall {
  return async (request) => {
    const response = await handler(request);
    const trailer = response.trailer;
    if (trailer !== undefined) {
      // gRPC: the status is in the trailer, final once the body is sent (streams fail late).
      fixGrpcTrailer(trailer);
      if (response.body === undefined) return response;
      return { ...response, body: afterBody(response.body, () => fixGrpcTrailer(trailer)) };
    }
    if (response.body === undefined) return response;
    const type = response.header?.get("content-type") ?? "";
    if (type.startsWith("application/grpc-web")) {
      return { ...response, body: rewriteFrames(response.body, trailerFlag, fixGrpcWebTrailer) };
    }
    if (type.startsWith("application/connect+")) {
      return { ...response, body: rewriteFrames(response.body, endStreamFlag, fixEndStream) };
    }
    if (
      response.status !== 200 && type.startsWith("application/json") &&
      !response.header?.has(ERROR_CODE_TRAILER) && !response.header?.has("content-encoding")
    ) {
      return await rewriteConnectError(response);
    }
    return response;
  };
}

/** The catalogue code `withErrorInfo` gave an error. */
function errorCodeOf(error: ConnectError): string {
  return error.metadata.get(ERROR_CODE_TRAILER) ?? "";
}

function fixGrpcTrailer(trailer: Headers): void {
  if (trailer.has(ERROR_CODE_TRAILER)) return;
  const error = findTrailerError(trailer);
  if (error === undefined) return;
  const fixed = withErrorInfo(error);
  if (fixed === error) return;
  setTrailerStatus(trailer, fixed);
  trailer.set(ERROR_CODE_TRAILER, errorCodeOf(fixed));
}

async function rewriteConnectError(
  response: UniversalServerResponse,
): Promise<UniversalServerResponse> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const rest = response.body![Symbol.asyncIterator]();
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
  let body: Uint8Array = bytes;
  let status = response.status;
  const header = new Headers(response.header);
  let error: ConnectError | undefined;
  try {
    error = errorFromJsonBytes(bytes, undefined, NOT_AN_ERROR);
  } catch {
    error = undefined;
  }
  const fixed = error && withErrorInfo(error);
  if (error !== undefined && fixed !== undefined && fixed !== error) {
    body = errorToJsonBytes(fixed, undefined);
    header.set(ERROR_CODE_TRAILER, errorCodeOf(fixed));
    if (fixed.code !== error.code) status = codeToHttpStatus(fixed.code);
  }
  header.set("content-length", String(body.byteLength));
  return {
    ...response,
    status,
    header,
    body: (async function* () {
      yield body;
    })(),
  };
}

async function* afterBody(
  body: AsyncIterable<Uint8Array>,
  done: () => void,
): AsyncIterable<Uint8Array> {
  yield* body;
  done();
}

/**
 * gRPC-Web and Connect streams send their status in a last frame, flagged `flag`, at the end of
 * the body. Connect writes whole frames per chunk, so a chunk is walked frame by frame and only
 * that frame is rewritten (a compressed one, flagged `flag | 1`, is passed on as it is).
 */
async function* rewriteFrames(
  body: AsyncIterable<Uint8Array>,
  flag: number,
  fix: (data: Uint8Array) => Uint8Array | undefined,
): AsyncIterable<Uint8Array> {
  for await (const chunk of body) yield rewriteFrame(chunk, flag, fix);
}

function rewriteFrame(
  chunk: Uint8Array,
  flag: number,
  fix: (data: Uint8Array) => Uint8Array | undefined,
): Uint8Array {
  const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  for (let at = 0; at + 5 <= chunk.byteLength;) {
    const length = view.getUint32(at + 1);
    const end = at + 5 + length;
    if (end > chunk.byteLength) return chunk;
    if (chunk[at] === flag) {
      const fixed = fix(chunk.subarray(at + 5, end));
      if (fixed === undefined) return chunk;
      const out = new Uint8Array(at + 5 + fixed.byteLength + (chunk.byteLength - end));
      out.set(chunk.subarray(0, at));
      out[at] = flag;
      new DataView(out.buffer).setUint32(at + 1, fixed.byteLength);
      out.set(fixed, at + 5);
      out.set(chunk.subarray(end), at + 5 + fixed.byteLength);
      return out;
    }
    at = end;
  }
  return chunk;
}

function fixGrpcWebTrailer(data: Uint8Array): Uint8Array | undefined {
  const trailer = trailerParse(data);
  if (trailer.has(ERROR_CODE_TRAILER)) return undefined;
  const error = findTrailerError(trailer);
  if (error === undefined) return undefined;
  const fixed = withErrorInfo(error);
  if (fixed === error) return undefined;
  setTrailerStatus(trailer, fixed);
  trailer.set(ERROR_CODE_TRAILER, errorCodeOf(fixed));
  return trailerSerialize(trailer);
}

function fixEndStream(data: Uint8Array): Uint8Array | undefined {
  let end: ReturnType<typeof endStreamFromJson>;
  try {
    end = endStreamFromJson(data);
  } catch {
    return undefined;
  }
  if (end.error === undefined || end.metadata.has(ERROR_CODE_TRAILER)) return undefined;
  const fixed = withErrorInfo(end.error);
  if (fixed === end.error) return undefined;
  end.metadata.set(ERROR_CODE_TRAILER, errorCodeOf(fixed));
  return new TextEncoder().encode(JSON.stringify(endStreamToJson(end.metadata, fixed, undefined)));
}

/**
 * Connect's request gate (runs before the request is read): a Connect GET whose `message` is
 * not base64 though `base64=1` says so is INVALID_ARGUMENT `invalid-parameter`. Connect-ES
 * decodes it with a plain Error, which it reports as INTERNAL (HTTP 500).
 */
export function refuseUndecodableQuery(context: HandlerContext): void {
  if (context.requestMethod !== "GET") return;
  const query = new URL(context.url).searchParams;
  if (query.get("base64") !== "1") return;
  try {
    base64Decode(query.get("message") ?? "");
  } catch {
    throw appConnectError(
      new AppError(
        "invalid-parameter",
        "the message query parameter is not base64 (base64=1)",
        { field: "message" },
      ),
    );
  }
}
