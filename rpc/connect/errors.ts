import { Code, ConnectError } from "@connectrpc/connect";
import { AppError, type ErrorCode } from "../../lib/errors.ts";
import type { Logger } from "../../lib/log.ts";
import { BadRequestSchema, ErrorInfoSchema } from "../gen/google/rpc/error_details_pb.ts";
import { isUnreadableInput, raisedErrorCode } from "./raised_error_codes.ts";

/**
 * The gRPC status of every application error code. A Record so that a new code cannot be added
 * to lib/errors.ts without deciding its gRPC status here.
 */
export const GRPC_CODE_OF: Readonly<Record<ErrorCode, Code>> = {
  "bad-request": Code.InvalidArgument,
  "invalid-body": Code.InvalidArgument,
  "invalid-field": Code.InvalidArgument,
  "invalid-parameter": Code.InvalidArgument,
  "unauthorized": Code.Unauthenticated,
  "forbidden": Code.PermissionDenied,
  "book-not-found": Code.NotFound,
  "address-not-found": Code.NotFound,
  "route-not-found": Code.NotFound,
  "method-not-allowed": Code.Unimplemented,
  "not-acceptable": Code.InvalidArgument,
  "id-taken": Code.AlreadyExists,
  "request-in-progress": Code.Aborted,
  "quota-exceeded": Code.ResourceExhausted,
  // AIP-154: an etag that no longer matches is ABORTED (re-read, then retry the change).
  "precondition-failed": Code.Aborted,
  "precondition-required": Code.FailedPrecondition,
  // AIP-193's code for a position past what is kept (an expired resume token).
  "events-expired": Code.OutOfRange,
  "payload-too-large": Code.ResourceExhausted,
  "unsupported-media-type": Code.InvalidArgument,
  "idempotency-key-reused": Code.FailedPrecondition,
  "rate-limited": Code.ResourceExhausted,
  "service-unavailable": Code.Unavailable,
  // Retryable, as 503 is: the fault is this instance's storage, not the caller's quota.
  "storage-unavailable": Code.Unavailable,
  "deadline-exceeded": Code.DeadlineExceeded,
  "internal": Code.Internal,
};

/** Trailer carrying the application error code (the REST body's `error` member). */
export const ERROR_CODE_TRAILER = "error-code";

/**
 * The metadata an application error travels with in every RPC protocol: its own headers
 * (WWW-Authenticate, RateLimit, …), its code as the `error-code` trailer, and with a retry hint
 * both `Retry-After` and gRPC's own retry pushback, which clients with a retry policy honour.
 */
function errorMetadata(error: AppError): Record<string, string> {
  const metadata: Record<string, string> = { ...error.headers, [ERROR_CODE_TRAILER]: error.code };
  if (error.retryAfter !== undefined) {
    metadata["grpc-retry-pushback-ms"] = String(error.retryAfter * 1000);
    metadata["retry-after"] = String(error.retryAfter);
  }
  return metadata;
}

/** Details of a ConnectError, as it takes them (Connect-ES does not export the type). */
type ErrorDetails = NonNullable<ConstructorParameters<typeof ConnectError>[3]>;

/**
 * `google.rpc.ErrorInfo.domain` of every error this server sends: the catalogue its `reason`
 * codes come from (docs/errors.md). Stable: clients may match on it.
 */
const ERROR_DOMAIN = "books-and-addresses";

/**
 * The details an application error travels with (google.rpc, decoded by any gRPC client that
 * knows the types): `ErrorInfo` with the error code as `reason`, so a client reads the same code
 * as REST's `errors[0].error`, and the first problem's field and the retry hint in `metadata`;
 * and `BadRequest` with one violation per problem that names a field (REST's `errors` array).
 */
function errorDetails(error: AppError): ErrorDetails {
  const metadata: Record<string, string> = {};
  const field = error.problems[0]!.field;
  if (field !== undefined) metadata.field = field;
  if (error.retryAfter !== undefined) metadata.retryAfterSeconds = String(error.retryAfter);
  const details: ErrorDetails = [
    { desc: ErrorInfoSchema, value: { reason: error.code, domain: ERROR_DOMAIN, metadata } },
  ];
  const violations = error.problems.flatMap((p) =>
    p.field === undefined ? [] : [{ field: p.field, description: p.detail }]
  );
  if (violations.length > 0) {
    details.push({ desc: BadRequestSchema, value: { fieldViolations: violations } });
  }
  return details;
}

/** An application error as a gRPC status: its code's status, detail, metadata and details. */
export function appConnectError(error: AppError): ConnectError {
  const metadata = new Headers(errorMetadata(error));
  const detail = error.problems.map((p) => p.detail).join(" ");
  return new ConnectError(detail, GRPC_CODE_OF[error.code], metadata, errorDetails(error), error);
}

/** Where the failure happened, for the log line of an unexpected error. */
interface ErrorContext {
  logger: Logger;
  requestId: string;
  procedure: string;
}

/**
 * Renders anything a handler threw as a gRPC status. Application errors keep their code (as the
 * `error-code` trailer and `ErrorInfo.reason`) and developer detail; errors Connect raised itself
 * (deadline, limits, bad input) keep their status and gain their catalogue code (`withErrorInfo`);
 * anything else is logged with its stack and reaches the client only as INTERNAL with the request
 * id, so no internals leak.
 */
export function toConnectError(error: unknown, context: ErrorContext): ConnectError {
  if (error instanceof ConnectError) return withErrorInfo(error);
  if (error instanceof AppError) return appConnectError(error);
  context.logger.error("unhandled error", {
    requestId: context.requestId,
    procedure: context.procedure,
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    stack: error instanceof Error ? error.stack : undefined,
  });
  return new ConnectError(
    `An unexpected error occurred (request id ${context.requestId}).`,
    Code.Internal,
    new Headers({ [ERROR_CODE_TRAILER]: "internal" }),
    [{ desc: ErrorInfoSchema, value: { reason: "internal", domain: ERROR_DOMAIN } }],
  );
}

/**
 * `error` as it is when it carries an ErrorInfo; else, with its message kept, an ErrorInfo and
 * `error-code` metadata with the catalogue code of what Connect (or a library) refused
 * (./raised_error_codes.ts), so that every error a client sees names its catalogue code. Its
 * status is kept too, but for input Connect could not read, which is INVALID_ARGUMENT, not
 * INTERNAL. An error read from the wire stays one: whoever renders it again adds `error-code`.
 */
export function withErrorInfo(error: ConnectError): ConnectError {
  const unreadable = isUnreadableInput(error);
  const known = error.findDetails(ErrorInfoSchema)[0]?.reason;
  if (!unreadable && known !== undefined) return error;
  const status = unreadable ? Code.InvalidArgument : error.code;
  const raised = raisedErrorCode(status, error.rawMessage);
  const metadata = new Headers(error.metadata);
  metadata.set(ERROR_CODE_TRAILER, known ?? raised.code);
  const mapped = new ConnectError(error.rawMessage, status, metadata, undefined, error.cause);
  // Details read from the wire stay as they came (Connect's constructor takes only its own kind).
  mapped.details = known !== undefined ? error.details : [
    ...error.details,
    ...errorDetails(new AppError(raised.code, error.rawMessage, { field: raised.field })),
  ];
  mapped.isWireError = error.isWireError;
  return mapped;
}
