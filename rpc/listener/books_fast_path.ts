import type http2 from "node:http2";
import { Buffer } from "node:buffer";
import type { ContextValues } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import type { Logger } from "../../lib/log.ts";
import { logRpcAccess } from "../../lib/access_log.ts";
import type { BookStore } from "../../store/books.ts";
import { booksAnswer } from "../connect/books_service.ts";
import { BooksService } from "../gen/books/v1/books_pb.ts";
import { BOOKS_RPC_PATH } from "../../lib/paths.ts";
import { requestIdFrom } from "../../lib/http/request_id.ts";
import { MAX_MESSAGE_BYTES } from "../connect/router.ts";
import { startRpcSpan, TRACING } from "../../lib/tracing.ts";

// The one call the fast path answers, as its log line names it.
const PROCEDURE = BOOKS_RPC_PATH.slice(1);

// The plain gRPC content types; anything else (gRPC-Web, Connect, parameters) takes the full path.
const GRPC_TYPES = new Set(["application/grpc", "application/grpc+proto"]);
// Timeouts of a millisecond or more: an answer from memory is sent well within them. Shorter
// ones, and malformed ones (which Connect rejects), take the full path.
const PLAIN_TIMEOUT = /^[1-9][0-9]{0,7}[HMSm]$/;

/**
 * Answers unary gRPC `books` calls straight on the HTTP/2 stream, with the framed response
 * encoded once per catalogue.
 *
 * Why: through the compatibility API and Connect's streaming pipeline most of a call's CPU on
 * Deno goes to per-call objects (request/response wrappers, an AbortSignal,
 * async iterables) for a call whose answer never changes. This path does the work a call
 * needs: read the request, check it, write the frame, headers and trailers, log one `rpc` line.
 *
 * Only a request whose body is exactly an empty, uncompressed `BooksRequest` is answered here.
 * Any other body (extra fields, several messages, a truncated or compressed envelope, too
 * large) is handed with the bytes read so far to `fallback`, Connect's own handler of the same
 * method, with the context every call of the listener gets (`contextValues`: its request id and
 * the gate's decision), so every answer, error or not, is exactly Connect's. Returns false for a
 * stream it does not take.
 */
export function booksFastPath(deps: {
  books: BookStore;
  logger: Logger;
  fallback: UniversalHandler;
  /** Reads and drops what is left of a request body the answer did not need. */
  drain: (stream: http2.ServerHttp2Stream) => void;
  /** Extra response headers of a stream (the gate's RateLimit), if any. */
  headersOf?: (stream: http2.ServerHttp2Stream) => Record<string, string> | undefined;
  /** The context of a call handed to `fallback`, as the listener gives every call. */
  contextValues: (stream: http2.ServerHttp2Stream, requestId: string) => ContextValues;
}): (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean {
  const { books, logger } = deps;
  // A catalogue that cannot be read fails the call in Connect's handler, where every error is
  // rendered and logged as for any other method.
  // The frame as a Buffer, made once per frame: node:http2 wraps any other Uint8Array in a new
  // Buffer on every write.
  let frame: Uint8Array | undefined;
  let frameBuffer: Buffer | undefined;
  function tryFrame(): Buffer | undefined {
    try {
      const current = booksAnswer(books).frame();
      if (current !== frame) {
        frame = current;
        frameBuffer = Buffer.from(current.buffer, current.byteOffset, current.byteLength);
      }
      return frameBuffer;
    } catch {
      return undefined;
    }
  }

  function answer(
    stream: http2.ServerHttp2Stream,
    body: Uint8Array,
    requestId: string,
    started: number,
    headers: http2.IncomingHttpHeaders,
  ) {
    if (stream.destroyed) return;
    stream.respond({
      ":status": 200,
      "content-type": "application/grpc+proto",
      "x-request-id": requestId,
      ...deps.headersOf?.(stream),
    }, { waitForTrailers: true });
    // `on`, not `once`, for events a stream emits once: no wrapper to allocate and remove.
    stream.on("wantTrailers", sendOkTrailers);
    stream.end(body);
    // Deno traces node:http2 streams but makes no span active here: the call gets its own.
    const span = TRACING
      ? startRpcSpan("grpc", BooksService.typeName, "books", requestId, started, {
        traceparent: headerValue(headers.traceparent),
        tracestate: headerValue(headers.tracestate),
      })
      : undefined;
    span?.end({ code: 0 });
    logRpcAccess(logger, {
      procedure: PROCEDURE,
      code: undefined,
      started,
      requestId,
      traceId: span?.traceId,
    });
  }

  return (stream, headers) => {
    if (!isCandidate(headers)) return false;
    const started = performance.now();
    const requestId = requestIdFrom(headerValue(headers["x-request-id"]));
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.byteLength;
      // Past the largest message there is no empty request to find: Connect refuses it, and
      // what is left of the body is drained once the answer is sent.
      if (size > MAX_MESSAGE_BYTES + 5) handOver(true);
    };
    const onEnd = () => {
      const body = size === 5 && isEmptyEnvelope(chunks) && tryFrame();
      // After `end` no `data` comes: the listener is left for the stream to drop.
      if (body) answer(stream, body, requestId, started, headers);
      else handOver(false);
    };
    function handOver(unread: boolean) {
      stream.off("data", onData);
      stream.off("end", onEnd);
      if (unread) {
        stream.pause();
        stream.once("finish", () => deps.drain(stream));
      }
      const context = deps.contextValues(stream, requestId);
      void serveFallback(stream, headers, chunks, context, deps.fallback);
    }
    stream.on("data", onData);
    stream.on("end", onEnd);
    return true;
  };
}

/** Whether five bytes read in `chunks` are an uncompressed envelope of an empty message. */
function isEmptyEnvelope(chunks: readonly Buffer[]): boolean {
  const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, 5);
  return bytes.length === 5 && bytes.every((byte) => byte === 0);
}

function sendOkTrailers(this: http2.ServerHttp2Stream) {
  if (this.sentTrailers === undefined) this.sendTrailers({ "grpc-status": "0" });
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function isCandidate(headers: http2.IncomingHttpHeaders): boolean {
  if (headers[":path"] !== BOOKS_RPC_PATH || headers[":method"] !== "POST") return false;
  if (!GRPC_TYPES.has(String(headers["content-type"]))) return false;
  const encoding = headers["grpc-encoding"];
  if (encoding !== undefined && encoding !== "identity") return false;
  const timeout = headers["grpc-timeout"];
  return timeout === undefined || PLAIN_TIMEOUT.test(String(timeout));
}

/**
 * Runs Connect's handler of the call on the bytes read so far and writes its answer on the
 * stream: the path every request the fast path does not answer itself takes.
 */
async function serveFallback(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  chunks: Buffer[],
  contextValues: ContextValues,
  handler: UniversalHandler,
): Promise<void> {
  const aborted = new AbortController();
  stream.once("close", () => aborted.abort());
  const header = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) header.append(name, String(v));
  }
  try {
    const response = await handler({
      httpVersion: "2.0",
      method: "POST",
      url: `http://${headers[":authority"] ?? "localhost"}${BOOKS_RPC_PATH}`,
      header,
      body: (async function* () {
        yield* chunks;
      })(),
      signal: aborted.signal,
      contextValues,
    });
    await writeUniversal(stream, response);
  } catch {
    // The client went away while the answer was written: nothing is left to tell it.
    if (!stream.destroyed) stream.close();
  }
}

async function writeUniversal(
  stream: http2.ServerHttp2Stream,
  response: UniversalServerResponse,
): Promise<void> {
  if (stream.destroyed) return;
  const head: http2.OutgoingHttpHeaders = { ":status": response.status };
  response.header?.forEach((value, name) => (head[name] = value));
  const trailer = response.trailer;
  stream.respond(head, { waitForTrailers: trailer !== undefined });
  // Connect fills the trailer in while the body is consumed, so it is read when due.
  if (trailer) {
    stream.once("wantTrailers", () => {
      const trailers: http2.OutgoingHttpHeaders = {};
      trailer.forEach((value, name) => (trailers[name] = value));
      stream.sendTrailers(trailers);
    });
  }
  if (response.body) {
    for await (const chunk of response.body) {
      if (stream.destroyed) return;
      if (!stream.write(chunk)) {
        await new Promise((resolve) => {
          stream.once("drain", resolve);
          stream.once("close", resolve);
        });
      }
    }
  }
  if (!stream.destroyed) stream.end();
}
