import { Code, type ConnectError } from "@connectrpc/connect";
import type { ErrorCode } from "../../lib/errors.ts";

// Connect-ES's wording for input it cannot read, which it reports as INTERNAL: an undecodable
// message, a compressed envelope without an encoding or with bytes that do not decompress.
const UNREADABLE_INPUT =
  /^(?:parse binary: |received compressed envelope, but do not know how to decompress|decompression failed|invalid envelope)/;

/**
 * Whether Connect reported input it could not read as INTERNAL: the client's mistake, which is
 * never INTERNAL or a 500 here (grpc-go answers INTERNAL; the fuzz suite holds us to the stricter
 * rule, docs/fuzzing.md).
 */
export function isUnreadableInput(error: ConnectError): boolean {
  return error.code === Code.Internal && UNREADABLE_INPUT.test(error.rawMessage);
}

/** The catalogue code of an error Connect raised itself, and the input it is about. */
export interface RaisedErrorCode {
  code: ErrorCode;
  field?: string;
}

/**
 * Connect's own refusals, told by its status and its wording (Connect-ES 2 and
 * @bufbuild/protobuf 2), most specific first. Each maps to the catalogue code REST gives the same
 * mistake: a body that is not the method's message is `invalid-body`, a malformed header
 * `invalid-parameter` naming it, a field mask path `invalid-parameter` as the service's own check
 * of `update_mask` says, a message over the limit `payload-too-large`.
 */
const BY_WORDING: readonly [Code, RegExp, RaisedErrorCode][] = [
  [Code.InvalidArgument, /^protocol error: invalid grpc timeout/, {
    code: "invalid-parameter",
    field: "grpc-timeout",
  }],
  [Code.InvalidArgument, /^protocol error: invalid connect timeout/, {
    code: "invalid-parameter",
    field: "connect-timeout-ms",
  }],
  [Code.InvalidArgument, /^timeout \d+ms must be <=/, { code: "invalid-parameter" }],
  // proto3 JSON's FieldMask: paths are lowerCamelCase, and each must convert back.
  [Code.InvalidArgument, /^cannot decode message google\.protobuf\.FieldMask from JSON/, {
    code: "invalid-parameter",
  }],
  // JSON that is not the method's message: syntax, a key or a value it does not take.
  [Code.InvalidArgument, /^cannot decode .* from JSON/, { code: "invalid-body" }],
  // Envelopes that lie about their length, end early or carry an unexpected flag.
  [
    Code.InvalidArgument,
    /^(?:protocol error: (?:incomplete envelope|promised)|unexpected end flag)/,
    {
      code: "invalid-body",
    },
  ],
  // Binary that is not the message, a compressed envelope that cannot be read (INTERNAL in
  // Connect, INVALID_ARGUMENT once `isUnreadableInput` said so).
  [Code.InvalidArgument, UNREADABLE_INPUT, { code: "invalid-body" }],
  // A unary call's body with no message, or with two.
  [Code.Unimplemented, /^protocol error: (?:missing|received extra) input message/, {
    code: "invalid-body",
  }],
  // `grpc-encoding`, `content-encoding` or `compression` names a coding the server lacks.
  [Code.Unimplemented, /^unknown compression/, { code: "unsupported-media-type" }],
  [Code.ResourceExhausted, /readMaxBytes/, { code: "payload-too-large" }],
];

/**
 * Every other error without a catalogue code, by its status alone: what it means wherever the
 * service's own errors have that status. A Record, so that no status is left without a code.
 */
const BY_STATUS: Readonly<Record<Code, ErrorCode>> = {
  // The call ended before its answer: its client went away or its stream was stopped.
  [Code.Canceled]: "service-unavailable",
  [Code.Unknown]: "internal",
  [Code.InvalidArgument]: "bad-request",
  [Code.DeadlineExceeded]: "deadline-exceeded",
  [Code.NotFound]: "route-not-found",
  [Code.AlreadyExists]: "id-taken",
  [Code.PermissionDenied]: "forbidden",
  [Code.ResourceExhausted]: "payload-too-large",
  [Code.FailedPrecondition]: "bad-request",
  [Code.Aborted]: "request-in-progress",
  [Code.OutOfRange]: "invalid-parameter",
  [Code.Unimplemented]: "route-not-found",
  [Code.Internal]: "internal",
  [Code.Unavailable]: "service-unavailable",
  [Code.DataLoss]: "internal",
  [Code.Unauthenticated]: "unauthorized",
};

/**
 * The catalogue code of an error that came without one (Connect's own, or a library's), by its
 * status and message.
 */
export function raisedErrorCode(status: Code, message: string): RaisedErrorCode {
  for (const [code, wording, mapped] of BY_WORDING) {
    if (status === code && wording.test(message)) return mapped;
  }
  return { code: BY_STATUS[status] ?? "internal" };
}
