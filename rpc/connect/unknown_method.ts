import type { IncomingHttpHeaders } from "node:http";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import { AppError } from "../../lib/errors.ts";
import { appConnectError } from "./errors.ts";
import { type ErrorAnswer, plainErrorAnswer, rpcErrorAnswer } from "./error_answer.ts";
import type { Decision } from "../../security/gate.ts";
import { canonicalRequestPath, notCanonical } from "../../security/target.ts";

/** A request as node:http2 hands it over: a compatibility request, or a bare stream's fields. */
interface RequestLike {
  url?: string | undefined;
  method?: string | undefined;
  headers: IncomingHttpHeaders;
  /** Present on HTTP/2 requests. */
  stream?: {
    respond(headers: Record<string, string | number>, options: { endStream: boolean }): void;
    end(body: Uint8Array): void;
  };
}

/** The compatibility response of an HTTP/1.1 request (TLS with ALPN http/1.1). */
interface ResponseLike {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body: Uint8Array): unknown;
  end(): unknown;
}

/**
 * Answers a request no service took: a target that is not canonical gets 400
 * `invalid-parameter` (security/target.ts), anything else UNIMPLEMENTED with the gate's headers
 * (RateLimit). (With a gate, the listener refused the calls it refuses before: security/gate.ts
 * charges them.)
 */
export async function answerUnrouted(
  req: RequestLike,
  res: ResponseLike,
  decision: Decision | Promise<Decision> | undefined,
): Promise<void> {
  const target = req.url ?? "/";
  if (canonicalRequestPath(target) === undefined) return refuseCall(req, res, notCanonical(target));
  const decided = await decision;
  if (decided?.ok === false) return refuseCall(req, res, decided.error);
  unknownMethod(req, res, decided?.headers);
}

/**
 * Answers a path no service handles. gRPC and gRPC-Web clients get UNIMPLEMENTED as a
 * trailers-only response (status in the headers, HTTP 200, as the protocols require); Connect
 * clients get its JSON error with HTTP 404; anything else a plain 404.
 */
export function unknownMethod(
  req: RequestLike,
  res: ResponseLike,
  headers: Record<string, string> = {},
): void {
  const path = (req.url ?? "/").split("?")[0]!.slice(0, 200);
  const error = new ConnectError(`Method not found: ${path}`, Code.Unimplemented, headers);
  write(req, res, answerOf(req, error, 404));
}

/**
 * Answers a call refused before any service saw it (the gate's refusal, a target that is not
 * canonical) with the error's gRPC status in the client's protocol, without reading its body
 * (rpc/connect/error_answer.ts); a request in no RPC protocol gets the error's HTTP status.
 */
export function refuseCall(
  req: RequestLike,
  res: ResponseLike | undefined,
  error: AppError | ConnectError,
): void {
  const connectError = error instanceof AppError ? appConnectError(error) : error;
  write(req, res, answerOf(req, connectError, codeToHttpStatus(connectError.code)));
}

function answerOf(req: RequestLike, error: ConnectError, plainStatus: number): ErrorAnswer {
  const method = req.method ?? String(req.headers[":method"] ?? "POST");
  const type = String(req.headers["content-type"] ?? "");
  return rpcErrorAnswer(method, type, error) ?? plainErrorAnswer(error, plainStatus);
}

function write(req: RequestLike, res: ResponseLike | undefined, answer: ErrorAnswer): void {
  const { status, headers, body } = answer;
  if (req.stream) {
    // "Trailers-only" must be one HEADERS frame that ends the stream; grpc-js reports a missing
    // status otherwise. The compatibility API's writeHead()+end() sends two frames.
    req.stream.respond({ ":status": status, ...headers }, { endStream: body === undefined });
    if (body !== undefined) req.stream.end(body);
    return;
  }
  res?.writeHead(status, headers);
  if (body === undefined) res?.end();
  else res?.end(body);
}
