import http2 from "node:http2";
import { Buffer } from "node:buffer";
import { Code, ConnectError, type ContextValues } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { requestIdFrom } from "../../lib/http/request_id.ts";
import { answerUnary, requestMessage, type UnaryAnswer, unaryHead } from "./unary_call.ts";
import type { UnaryMethods } from "./unary_methods.ts";
import { callSignals } from "./call_signals.ts";

/** What the stream path needs from the listener. */
export interface StreamUnaryDeps {
  methods: UnaryMethods;
  /** The context every call of the listener gets (its request id, the gate's decision). */
  contextValues: (stream: http2.ServerHttp2Stream, requestId: string) => ContextValues;
  /** Once the answer is sent, reads and drops what is left of a request body. */
  drainOnceAnswered: (stream: http2.ServerHttp2Stream) => void;
  /** Aborts every call in flight (the listener's shutdown). */
  shutdownSignal?: AbortSignal | undefined;
}

/**
 * The gRPC listener's path for every unary call (gRPC, gRPC-Web and Connect, binary and
 * uncompressed, of any method of any service the listener serves), straight on the HTTP/2
 * stream: the body is read whole, its one message decoded with the method's schema, and the call
 * run and answered as Connect's protocol handler would (./unary_call.ts), without node:http2's
 * request and response wrappers or Connect's streaming pipeline.
 *
 * Returns false, before reading anything, for a stream it does not take (streaming methods,
 * unknown paths, JSON, compressed requests, Connect GET, unusual deadlines): the listener hands
 * that to node:http2's compatibility API and Connect. A body it cannot take as one plain message
 * (none or several, a compressed or incomplete envelope, too large, not a message) is handed
 * with the bytes read so far to Connect's own handler of the method, whose answer is an error in
 * every such case.
 */
export function unaryStreams(
  deps: StreamUnaryDeps,
): (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean {
  const { methods } = deps;
  const { options } = methods;
  // A body longer than one largest message in its envelope is not one plain message.
  const maxBody = options.readMaxBytes + 5;
  const signals = callSignals(deps.shutdownSignal);

  return (stream, headers) => {
    if (headers[":method"] !== "POST") return false;
    const method = methods.byPath.get(headers[":path"] ?? "");
    if (method === undefined) return false;
    const head = unaryHead(options, true, (name) => headerValue(headers[name]));
    if (head === undefined) return false;
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.byteLength;
      if (size > maxBody) handOver(true);
    };
    const onEnd = () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      const input = requestMessage(method, head.framing, body, options.readMaxBytes);
      if (input === undefined) return handOver(false);
      const requestId = requestIdFrom(headerValue(headers["x-request-id"]));
      const signal = signals.open(head.timeoutMs);
      const onClose = () => signal.clientGone();
      stream.on("close", onClose);
      answerUnary(method, options, {
        head,
        url: urlOf(headers),
        requestHeader: webHeaders(headers),
        values: deps.contextValues(stream, requestId),
        signal: signal.signal,
      }, input).then((answer) => {
        signal.close();
        stream.off("close", onClose);
        writeAnswer(stream, answer);
      }).catch(() => {
        // Every failure of the call is rendered in its answer: this is the answer failing to be
        // encoded or written (the connection went meanwhile). The stream is reset, not left open.
        signal.close();
        stream.off("close", onClose);
        if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      });
    };
    function handOver(unread: boolean) {
      stream.off("data", onData);
      stream.off("end", onEnd);
      if (unread) {
        // Connect reads on as far as it needs; the rest is drained once it answered.
        stream.pause();
        deps.drainOnceAnswered(stream);
      }
      const body = restOf(chunks, unread ? stream : undefined);
      const requestId = requestIdFrom(headerValue(headers["x-request-id"]));
      void serveWithConnect(
        stream,
        headers,
        body,
        deps.contextValues(stream, requestId),
        method!.handler,
      );
    }
    stream.on("data", onData);
    stream.on("end", onEnd);
    return true;
  };
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The request URL as Connect's node adapter makes it. */
function urlOf(headers: http2.IncomingHttpHeaders): string {
  const scheme = headers[":scheme"] === "https" ? "https" : "http";
  return `${scheme}://${headers[":authority"] ?? "localhost"}${headers[":path"]}`;
}

/** The request's header fields as Connect's node adapter hands them on (no pseudo-headers). */
function webHeaders(headers: http2.IncomingHttpHeaders): Headers {
  const header = new Headers();
  for (const name in headers) {
    if (name.charCodeAt(0) === 58 /* ":" */) continue;
    const value = headers[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) { for (const v of value) header.append(name, v); }
    else header.append(name, String(value));
  }
  return header;
}

/** Writes an answer on the stream: headers, the body, and the trailers when it has any. */
function writeAnswer(stream: http2.ServerHttp2Stream, answer: UnaryAnswer): void {
  if (stream.destroyed || stream.closed) return;
  const head: http2.OutgoingHttpHeaders = { ":status": answer.status };
  answer.header.forEach((value, name) => (head[name] = value));
  const trailer = answer.trailer;
  if (trailer === undefined) {
    stream.respond(head);
  } else {
    stream.respond(head, { waitForTrailers: true });
    pendingTrailers.set(stream, trailer);
    // `on`, not `once`, for an event a stream emits once: no wrapper to allocate and remove.
    stream.on("wantTrailers", sendTrailers);
  }
  stream.end(answer.body);
}

const pendingTrailers = new WeakMap<http2.ServerHttp2Stream, Headers>();

function sendTrailers(this: http2.ServerHttp2Stream): void {
  const trailer = pendingTrailers.get(this);
  if (trailer === undefined || this.sentTrailers !== undefined) return;
  const trailers: http2.OutgoingHttpHeaders = {};
  trailer.forEach((value, name) => (trailers[name] = value));
  this.sendTrailers(trailers);
}

/** The chunks read so far, then the rest of the stream if it has more. */
async function* restOf(
  chunks: readonly Buffer[],
  stream: http2.ServerHttp2Stream | undefined,
): AsyncIterable<Uint8Array> {
  yield* chunks;
  if (stream) { for await (const chunk of stream) yield chunk as Uint8Array; }
}

/**
 * Runs Connect's own handler of the call on `body` and writes its answer on the stream, as its
 * node adapter would have.
 */
async function serveWithConnect(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  body: AsyncIterable<Uint8Array>,
  contextValues: ContextValues,
  handler: UniversalHandler,
): Promise<void> {
  const aborted = new AbortController();
  stream.once("close", () => {
    if (!aborted.signal.aborted) {
      aborted.abort(new ConnectError("the client went away", Code.Canceled));
    }
  });
  try {
    const response = await handler({
      httpVersion: "2.0",
      method: "POST",
      url: urlOf(headers),
      header: webHeaders(headers),
      body,
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
    pendingTrailers.set(stream, trailer);
    stream.on("wantTrailers", sendTrailers);
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
