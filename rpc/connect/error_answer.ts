import { Code, type ConnectError } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  createEndStreamSerialization,
  endStreamFlag,
  errorToJsonBytes,
} from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { AppError } from "../../lib/errors.ts";
import { isGrpcMediaType, mediaTypeOf } from "../../lib/http/media_type.ts";
import { withErrorInfo } from "./errors.ts";

const CONNECT_UNARY_TYPES = new Set(["application/proto", "application/json"]);
const CONNECT_STREAM_TYPES = new Set(["application/connect+proto", "application/connect+json"]);

const endStream = createEndStreamSerialization(undefined);
const encoder = new TextEncoder();

/** An answer written without reading the request: status, header fields and body. */
export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  /** A body of its own (Connect's encoders allocate one per call). */
  body: Uint8Array<ArrayBuffer> | undefined;
}

/**
 * The answer to a call that fails before any service reads it (the gate's refusal, a target that
 * is not canonical, a method no service has), in the protocol the request speaks, told from its
 * method and Content-Type alone, so nothing of its body is read, inflated or parsed:
 * - gRPC and gRPC-Web (any subtype): "trailers-only", HTTP 200 with `grpc-status` and
 *   `grpc-message` in the headers and no body, which both protocols' clients read;
 * - Connect streaming (`application/connect+…`): HTTP 200 with one end-of-stream message;
 * - Connect unary (`application/proto`, `application/json`, or a GET): Connect's JSON error with
 *   the code's HTTP status (404 for UNIMPLEMENTED, as for a path no router knows).
 * The error's metadata (WWW-Authenticate, RateLimit, `error-code`, …) goes with it, and its
 * catalogue code in an ErrorInfo (its own, or `withErrorInfo`'s: UNIMPLEMENTED for a method no
 * service has is `route-not-found`). Undefined for a request in no RPC protocol: its listener
 * answers it as plain HTTP.
 */
export function rpcErrorAnswer(
  method: string,
  contentType: string,
  raised: ConnectError,
): ErrorAnswer | undefined {
  const error = withErrorInfo(raised);
  const type = mediaTypeOf(contentType);
  if (isGrpcMediaType(type)) {
    // Connect's own status fields (with `grpc-status-details-bin` for the error's details), then
    // the message encoded as every gRPC client decodes it.
    const status = setTrailerStatus(new Headers(), error);
    return {
      status: 200,
      headers: {
        ...metadataOf(error),
        ...Object.fromEntries(status),
        "content-type": type,
        "grpc-message": percentEncode(error.rawMessage),
      },
      body: undefined,
    };
  }
  if (type !== undefined && CONNECT_STREAM_TYPES.has(type)) {
    // The end message's metadata is the error's, which the serializer adds itself.
    const message = endStream.serialize({ metadata: new Headers(), error });
    return {
      status: 200,
      headers: { "content-type": type },
      body: encodeEnvelope(endStreamFlag, message) as Uint8Array<ArrayBuffer>,
    };
  }
  if (method === "GET" || (type !== undefined && CONNECT_UNARY_TYPES.has(type))) {
    return {
      status: error.code === Code.Unimplemented ? 404 : codeToHttpStatus(error.code),
      headers: { ...metadataOf(error), "content-type": "application/json" },
      body: errorToJsonBytes(error, undefined) as Uint8Array<ArrayBuffer>,
    };
  }
  return undefined;
}

/**
 * The same failure as plain text, for a request in no RPC protocol: the status of the application
 * error it came from, else `status`.
 */
export function plainErrorAnswer(error: ConnectError, status: number): ErrorAnswer {
  return {
    status: error.cause instanceof AppError ? error.cause.status : status,
    headers: { ...metadataOf(error), "content-type": "text/plain; charset=utf-8" },
    body: encoder.encode(`${error.rawMessage}\n`),
  };
}

function metadataOf(error: ConnectError): Record<string, string> {
  const fields: Record<string, string> = {};
  error.metadata.forEach((value, name) => (fields[name] = value));
  return fields;
}

/**
 * gRPC's `grpc-message` encoding: bytes outside printable ASCII, and `%`, as `%XX`; the rest
 * as is (decoders such as grpc-js's do not decode `%3A` or `%2F`).
 */
function percentEncode(text: string): string {
  let out = "";
  for (const byte of encoder.encode(text)) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25
      ? String.fromCharCode(byte)
      : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
