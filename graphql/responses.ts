import type { ExecutionResult, GraphQLError, GraphQLFormattedError } from "graphql";
import { AppError, type ErrorCode, type Problem } from "../lib/errors.ts";
import type { Logger } from "../lib/log.ts";
import type { GraphqlMediaType } from "./over_http.ts";

/** What the error rendering needs to know about the request. */
interface ResponseContext {
  type: GraphqlMediaType;
  requestId: string;
  logger: Logger;
}

const CONTENT_TYPE: Record<GraphqlMediaType, string> = {
  "application/json": "application/json; charset=utf-8",
  "application/graphql-response+json": "application/graphql-response+json; charset=utf-8",
};

/**
 * A successful result whose `{"data":…}` body is already serialised (a string: a Response takes
 * it as it is, where it would copy bytes). The request id is set here:
 * changing the headers of a finished Response (as the request middleware otherwise does) costs
 * Deno.serve more than building them with it.
 */
export function dataResponse(
  body: string,
  type: GraphqlMediaType,
  requestId: string,
): Response {
  return new Response(body, {
    headers: {
      "content-type": CONTENT_TYPE[type],
      "x-request-id": requestId,
      "x-content-type-options": "nosniff",
    },
  });
}

function respond(body: unknown, status: number, type: GraphqlMediaType, extra?: HeadersInit) {
  const headers = new Headers(extra);
  headers.set("content-type", CONTENT_TYPE[type]);
  return new Response(JSON.stringify(body), { status, headers });
}

/**
 * A failure before there is a GraphQL request to run (media type, size, unreadable body, bad
 * parameters): the HTTP status of the error model, the body in GraphQL's `errors` shape.
 */
export function requestErrorResponse(error: AppError, type: GraphqlMediaType): Response {
  const headers: Record<string, string> = { ...error.headers };
  if (error.retryAfter !== undefined) headers["retry-after"] = String(error.retryAfter);
  const errors = error.problems.map((p) => ({ message: p.detail, extensions: { code: p.code } }));
  return respond({ errors }, error.status, type, headers);
}

/**
 * What an operation asks of the address book, refused before it runs (graphql/operation_checks.ts):
 * like variables that do not coerce, errors without `data`, one per problem (with
 * `extensions.field` for an input's field).
 */
export function inputErrorsResponse(problems: readonly Problem[], type: GraphqlMediaType) {
  const errors = problems.map((problem) => ({
    message: problem.detail,
    extensions: extensionsOf(problem),
  }));
  return respond({ errors }, statusWithoutData(type), type);
}

function extensionsOf(problem: Problem, retryAfter?: number): Record<string, unknown> {
  return {
    code: problem.code,
    ...(problem.field !== undefined && { field: problem.field }),
    ...(retryAfter !== undefined && { retryAfter }),
  };
}

/**
 * GraphQL-over-HTTP status for a response without `data` (a document or request error):
 * 200 for `application/json` (legacy clients read the body), 400 for
 * `application/graphql-response+json`.
 */
function statusWithoutData(type: GraphqlMediaType): number {
  return type === "application/json" ? 200 : 400;
}

function withCode(error: GraphQLError, code: ErrorCode): GraphQLFormattedError {
  const json = error.toJSON();
  return { ...json, extensions: { ...json.extensions, code: json.extensions?.code ?? code } };
}

/**
 * Syntax, validation and limit errors of a document: nothing was executed. `status` overrides
 * the GraphQL-over-HTTP status (413 for a document over the size limit).
 */
export function documentErrorsResponse(
  errors: readonly GraphQLError[],
  type: GraphqlMediaType,
  status = statusWithoutData(type),
): Response {
  return respond({ errors: errors.map((e) => withCode(e, "invalid-parameter")) }, status, type);
}

/**
 * The result of an execution that reported errors. Without `data`, the errors are the client's
 * (unknown operation, variables that do not coerce, an operation type the schema lacks). With
 * `data` (even `null`: GraphQL-over-HTTP's partial response, always 200), they are field errors:
 * an AppError (the address book's refusals, a storage fault) keeps its code and detail, one error
 * per problem; anything else is logged with the request id and masked.
 */
export function executionResponse(result: ExecutionResult, context: ResponseContext): Response {
  const body = formattedResult(result, context);
  const status = result.errors !== undefined && result.data === undefined
    ? statusWithoutData(context.type)
    : 200;
  return respond(body, status, context.type);
}

/**
 * An execution's result as the client gets it: errors with their codes, a storage fault's
 * `retryAfter`, an unexpected one as `internal` (its cause logged, not answered).
 */
export function formattedResult(
  result: ExecutionResult,
  context: ResponseContext,
): { data?: unknown; errors?: GraphQLFormattedError[] } {
  if (result.errors === undefined) return { data: result.data };
  if (result.data === undefined) {
    // Before any field ran (variables, the operation): only a subscription's own field may
    // have failed here, with its code.
    const errors = result.errors.flatMap((e) =>
      e.originalError instanceof AppError
        ? fieldErrors(e, context)
        : [withCode(e, "invalid-parameter")]
    );
    return { errors };
  }
  return {
    errors: result.errors.flatMap((error) => fieldErrors(error, context)),
    data: result.data,
  };
}

function fieldErrors(error: GraphQLError, context: ResponseContext): GraphQLFormattedError[] {
  const cause = error.originalError;
  const where = { locations: error.locations, path: error.path };
  if (cause instanceof AppError) {
    // A storage fault keeps its meaning: its code, and when to retry.
    return cause.problems.map((problem) => ({
      message: problem.detail,
      ...where,
      extensions: extensionsOf(problem, cause.retryAfter),
    }));
  }
  context.logger.error("graphql field failed", {
    requestId: context.requestId,
    path: error.path?.join("."),
    error: cause ? `${cause.name}: ${cause.message}` : error.message,
    stack: cause?.stack,
  });
  return [{
    message: `Internal error; quote request id ${context.requestId} when reporting it.`,
    ...where,
    extensions: { code: "internal", requestId: context.requestId },
  }];
}
