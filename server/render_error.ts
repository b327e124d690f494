import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { AppError, type ErrorCode, negotiateLanguage, userMessage } from "../lib/errors.ts";
import { preferredMediaType } from "../lib/http/accept.ts";
import type { Logger } from "../lib/log.ts";
import type { AppEnv } from "../lib/http/hono_env.ts";
import { ERRORS_DOC_PATH } from "../lib/paths.ts";

const REASON: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  409: "Conflict",
  412: "Precondition Failed",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/**
 * Link to the documentation entry of an error code, served by this server: `base` is
 * `PUBLIC_URL` (without its trailing slash), or "" for a relative link. Never built from the
 * request: its Host (or an absolute-form target) is the client's to choose.
 */
export function helpUrl(base: string, code: string): string {
  return `${base}${ERRORS_DOC_PATH}#${code}`;
}

/**
 * The problem's `instance`: the request's path (as sent, percent-encoded) and id. Leading slashes
 * are collapsed, so that a path such as `//evil.example/x` cannot make it a network-path
 * reference to another host.
 */
function instanceUrl(base: string, requestUrl: string, requestId: string): string {
  const path = uriPath(requestUrl).replace(/^\/+/, "/");
  return `${base}${path}#request-${requestId}`;
}

// Named alike, the problem document wins; through a wildcard, the default body.
const ERROR_TYPES = ["application/problem+json", "application/json"];

function wantsProblemJson(accept: string | undefined): boolean {
  return preferredMediaType(accept, ERROR_TYPES, "application/json") === "application/problem+json";
}

/**
 * The path of a request URL as an RFC 3986 URI reference. The router's path is decoded (`é`,
 * spaces), and the URL's keeps characters RFC 3986 does not allow (`|`, `^`, a `%` that starts
 * no escape); each of those is percent-encoded.
 */
function uriPath(url: string): string {
  return new URL(url).pathname
    .replace(/%(?![0-9A-Fa-f]{2})/g, "%25")
    .replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]/gu, (ch) => encodeURIComponent(ch));
}

/**
 * Renders a mapped error for REST: the detailed body (docs/errors.md) by default, RFC 7807 when the
 * client accepts `application/problem+json`. Messages follow Accept-Language; details do not.
 * Links start with `base` (`PUBLIC_URL`), relative when it is "".
 */
export function renderAppError(c: Context<AppEnv>, error: AppError, base = ""): Response {
  const language = negotiateLanguage(c.req.header("accept-language"));
  const headers: Record<string, string> = { ...error.headers, "content-language": language };
  if (error.retryAfter !== undefined) headers["retry-after"] = String(error.retryAfter);
  const first = error.problems[0]!;
  if (wantsProblemJson(c.req.header("accept"))) {
    headers["content-type"] = "application/problem+json";
    const body = {
      type: helpUrl(base, first.code),
      title: userMessage(first.code, language),
      status: error.status,
      detail: first.detail,
      instance: instanceUrl(base, c.req.url, c.get("requestId")),
      errors: error.problems.map((p) => ({ error: p.code, detail: p.detail })),
    };
    return new Response(JSON.stringify(body), { status: error.status, headers });
  }
  headers["content-type"] = "application/json";
  const body = {
    errors: error.problems.map((p) => ({
      error: p.code,
      message: userMessage(p.code, language),
      detail: p.detail,
      help: helpUrl(base, p.code),
    })),
  };
  return new Response(JSON.stringify(body), { status: error.status, headers });
}

/** ISO 8601 date-time with a numeric offset, in UTC: `2026-01-02T03:04:05.678+00:00`. */
function isoWithOffset(date: Date): string {
  return date.toISOString().replace("Z", "+00:00");
}

/**
 * Renders an unexpected exception: the default body (docs/errors.md) with status 500 and an empty
 * message. The stack goes to the log with the request id, never to the client.
 */
function renderUnexpected(c: Context<AppEnv>, error: unknown, logger: Logger): Response {
  logger.error("unhandled error", {
    requestId: c.get("requestId"),
    method: c.req.method,
    path: c.req.path,
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    stack: error instanceof Error ? error.stack : undefined,
  });
  const body = {
    timestamp: isoWithOffset(new Date()),
    status: 500,
    error: REASON[500],
    message: "",
    path: c.req.path,
  };
  return new Response(JSON.stringify(body), {
    status: 500,
    headers: { "content-type": "application/json" },
  });
}

// The code of each status a framework exception may carry. A 4xx without its own code is
// still the client's fault: `bad-request`.
const CODE_OF_STATUS: Record<number, ErrorCode> = {
  400: "bad-request",
  401: "unauthorized",
  403: "forbidden",
  404: "route-not-found",
  405: "method-not-allowed",
  406: "not-acceptable",
  412: "precondition-failed",
  413: "payload-too-large",
  415: "unsupported-media-type",
  429: "rate-limited",
  503: "service-unavailable",
};

// Headers of a framework exception's own response that still mean something on ours.
const KEPT_HEADERS = ["allow", "www-authenticate", "retry-after", "accept-patch"];

/**
 * Maps an exception the framework threw (Hono's `HTTPException` from a validator, a media-type
 * gate or a middleware, or anything shaped like it) to the error model; undefined for anything
 * else and for 5xx other than 503, which stay unexpected. Its message is the framework's wording,
 * so it goes to `detail` only.
 */
function appErrorFromFramework(error: unknown): AppError | undefined {
  if (!(error instanceof HTTPException) && !isHttpExceptionLike(error)) return undefined;
  const status = error.status;
  const code = CODE_OF_STATUS[status] ??
    (status >= 400 && status < 500 ? "bad-request" : undefined);
  if (code === undefined) return undefined;
  const headers: Record<string, string> = {};
  const own = error.getResponse?.().headers;
  for (const name of KEPT_HEADERS) {
    const value = own?.get(name);
    if (value) headers[name] = value;
  }
  const retryAfter = headers["retry-after"] === undefined
    ? undefined
    : Number(headers["retry-after"]);
  delete headers["retry-after"];
  return new AppError(code, frameworkDetail(error.message, status), {
    headers,
    retryAfter: Number.isFinite(retryAfter) ? retryAfter : undefined,
    cause: error,
  });
}

interface HttpExceptionLike {
  status: number;
  message: string;
  getResponse?: () => Response;
}

// Another copy of Hono (a dependency's own) throws its own HTTPException class.
function isHttpExceptionLike(error: unknown): error is HttpExceptionLike {
  return error instanceof Error && error.name === "HTTPException" &&
    typeof (error as { status?: unknown }).status === "number";
}

function frameworkDetail(message: string, status: number): string {
  const text = message.trim().slice(0, 200);
  return text ? `${text}.`.replace(/\.\.$/, ".") : `The request was refused (${status}).`;
}

/** Renders anything thrown inside a handler: mapped errors by the model, the rest as 500. */
export function renderThrown(
  c: Context<AppEnv>,
  error: unknown,
  logger: Logger,
  base = "",
): Response {
  if (error instanceof AppError) return renderAppError(c, error, base);
  const mapped = appErrorFromFramework(error);
  if (mapped) return renderAppError(c, mapped, base);
  return renderUnexpected(c, error, logger);
}
