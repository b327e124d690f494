import type { IncomingHttpHeaders } from "node:http";
import { Code, type ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, errorToJson } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import type { AppError } from "../../lib/errors.ts";
import { appConnectError, errorMetadata } from "./errors.ts";
import type { Decision } from "../../security/gate.ts";
import { canonicalRequestPath, notCanonical } from "../../security/target.ts";
import { isGrpcMediaType, mediaTypeOf } from "../../lib/http/media_type.ts";

// Connect's unary and streaming types.
const CONNECT_TYPES = new Set([
  "application/proto",
  "application/json",
  "application/connect+proto",
  "application/connect+json",
]);

interface RequestLike {
  url?: string | undefined;
  headers: IncomingHttpHeaders;
  /** Present on HTTP/2 requests. */
  stream?: {
    respond(headers: Record<string, string | number>, options: { endStream: boolean }): void;
  };
}

interface ResponseLike {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body: string): unknown;
  end(): unknown;
}

/**
 * Answers a request no service took: a target that is not canonical gets 400
 * `invalid-parameter` (security/target.ts), a call the gate refused gets the refusal (deny by default:
 * no service declares the path), anything else UNIMPLEMENTED with the gate's headers (RateLimit).
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
  answer(req, res, {
    code: Code.Unimplemented,
    message: `Method not found: ${path}`,
    status: 404,
    headers,
  });
}

/**
 * Answers a call refused before any service saw it (a target that is not canonical, the gate's
 * refusal of a path no service handles) with the error's gRPC status, in the client's protocol:
 * trailers-only for gRPC and gRPC-Web, Connect's JSON error, else the error's HTTP status.
 */
export function refuseCall(req: RequestLike, res: ResponseLike, error: AppError): void {
  const rendered = appConnectError(error);
  answer(req, res, {
    code: rendered.code,
    message: rendered.rawMessage,
    status: error.status,
    headers: errorMetadata(error),
    details: rendered,
  });
}

function answer(
  req: RequestLike,
  res: ResponseLike,
  error: {
    code: Code;
    message: string;
    status: number;
    headers: Record<string, string>;
    /** The error with its details (google.rpc.ErrorInfo), as a service's error carries them. */
    details?: ConnectError;
  },
): void {
  const { code, message } = error;
  const type = mediaTypeOf(req.headers["content-type"]);
  if (isGrpcMediaType(type)) {
    const headers = {
      ...error.headers,
      "content-type": type,
      "grpc-status": String(code),
      "grpc-message": percentEncode(message),
      ...(error.details && {
        "grpc-status-details-bin": setTrailerStatus(new Headers(), error.details)
          .get("grpc-status-details-bin")!,
      }),
    };
    // "Trailers-only" must be one HEADERS frame that ends the stream; grpc-js reports a missing
    // status otherwise. The compatibility API's writeHead()+end() sends two frames.
    if (req.stream) req.stream.respond({ ":status": 200, ...headers }, { endStream: true });
    else {
      res.writeHead(200, headers);
      res.end();
    }
    return;
  }
  if (type !== undefined && CONNECT_TYPES.has(type)) {
    const status = code === Code.Unimplemented ? 404 : codeToHttpStatus(code);
    res.writeHead(status, { ...error.headers, "content-type": "application/json" });
    const body = error.details ? errorToJson(error.details, undefined) : {
      code: codeToName(code),
      message,
    };
    res.end(JSON.stringify(body));
    return;
  }
  res.writeHead(error.status, { ...error.headers, "content-type": "text/plain; charset=utf-8" });
  res.end(`${message}\n`);
}

/** Connect's name of a code: `unimplemented`, `invalid_argument`, … */
function codeToName(code: Code): string {
  return Code[code].replace(/[A-Z]/g, (c, i) => (i === 0 ? "" : "_") + c.toLowerCase());
}

/**
 * gRPC's `grpc-message` encoding: bytes outside printable ASCII, and `%`, as `%XX`; the rest
 * as is (decoders such as grpc-js's do not decode `%3A` or `%2F`).
 */
function percentEncode(text: string): string {
  let out = "";
  for (const byte of new TextEncoder().encode(text)) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25
      ? String.fromCharCode(byte)
      : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
