import type { ContextValues } from "@connectrpc/connect";
import { answerUnary, requestMessage, unaryHead } from "./unary_call.ts";
import type { UnaryMethod, UnaryOptions } from "./unary_methods.ts";
import { callSignals } from "./call_signals.ts";
import { completeAnswer } from "../../lib/http/response_headers.ts";

/**
 * The HTTP port's path for every unary call in Connect or gRPC-Web binary framing: the fetch
 * `Request` read whole, its one message decoded, the call run and answered as Connect's protocol
 * handler would (./unary_call.ts), as a fetch `Response` with a body of bytes instead of a
 * stream. Returns undefined, before reading anything, for a request it does not take (JSON,
 * compressed, Connect GET, unusual deadlines, no Content-Length); `handOver` answers a body it
 * read but cannot take as one plain message (Connect's own handler, on the bytes read).
 */
export function fetchUnary(
  method: UnaryMethod,
  options: UnaryOptions,
): (
  request: Request,
  values: ContextValues,
  handOver: (body: Uint8Array) => Promise<Response>,
) => Promise<Response> | undefined {
  const signals = callSignals(options.shutdownSignal);
  const maxBody = options.readMaxBytes + 5;
  return (request, values, handOver) => {
    if (request.method !== "POST") return undefined;
    const headers = request.headers;
    const head = unaryHead(options, false, (name) => headers.get(name));
    const length = headers.get("content-length");
    if (head === undefined || length === null || !(Number(length) <= maxBody)) return undefined;
    return (async () => {
      const body = new Uint8Array(await request.arrayBuffer());
      const input = requestMessage(method, head.framing, body, options.readMaxBytes);
      if (input === undefined) return await handOver(body);
      // A fetch handler learns that its client went away only once the answer was due, so the
      // signal ends a call at its deadline or the server's shutdown.
      const signal = signals.open(head.timeoutMs);
      try {
        const answer = await answerUnary(method, options, {
          head,
          url: request.url,
          requestHeader: headers,
          values,
          signal: signal.signal,
        }, input);
        return rpcResponse(answer.status, answer.header, answer.body);
      } finally {
        signal.close();
      }
    })();
  };
}

/**
 * A call's answer as a fetch Response, on either path of the HTTP port.
 */
export function rpcResponse(
  status: number,
  header: Headers,
  body: Uint8Array | undefined,
): Response {
  const complete = withEntryHeaders(header);
  const response = new Response(body as Uint8Array<ArrayBuffer> | undefined, {
    status,
    headers: header,
  });
  return complete ? completeAnswer(response) : response;
}

/**
 * Adds `nosniff` to a call's answer as the HTTP entry would, when its headers carry its request
 * id (the interceptor sets it); then the answer can be marked complete (lib/http/response_headers.ts):
 * the entry leaves its headers unread, and Deno.serve keeps its fast path for it.
 */
export function withEntryHeaders(header: Headers): boolean {
  if (!header.has("x-request-id")) return false;
  if (!header.has("x-content-type-options")) header.set("x-content-type-options", "nosniff");
  return true;
}
