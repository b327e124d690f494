import type { Context } from "hono";
import { AppError, negotiateLanguage, userMessage } from "../lib/errors.ts";
import type { Logger } from "../lib/log.ts";
import type { AppEnv } from "../lib/app_env.ts";

const REASON: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  412: "Precondition Failed",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** Link to the documentation entry of an error code, served by this server. */
export function helpUrl(requestUrl: string, code: string): string {
  return `${new URL(requestUrl).origin}/docs/errors#${code}`;
}

function wantsProblemJson(accept: string | undefined): boolean {
  return accept !== undefined && accept.includes("application/problem+json");
}

/**
 * Renders a mapped error for REST: the detailed body (spec 7.4) by default, RFC 7807 when the
 * client accepts `application/problem+json`. Messages follow Accept-Language; details do not.
 */
export function renderAppError(c: Context<AppEnv>, error: AppError): Response {
  const language = negotiateLanguage(c.req.header("accept-language"));
  const headers: Record<string, string> = { ...error.headers, "content-language": language };
  if (error.retryAfter !== undefined) headers["retry-after"] = String(error.retryAfter);
  const first = error.problems[0]!;
  if (wantsProblemJson(c.req.header("accept"))) {
    headers["content-type"] = "application/problem+json";
    const body = {
      type: helpUrl(c.req.url, first.code),
      title: userMessage(first.code, language),
      status: error.status,
      detail: first.detail,
      instance: `${c.req.path}#request-${c.get("requestId")}`,
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
      help: helpUrl(c.req.url, p.code),
    })),
  };
  return new Response(JSON.stringify(body), { status: error.status, headers });
}

/** ISO 8601 date-time with a numeric offset (spec 7.3), in UTC: `2026-01-02T03:04:05.678+00:00`. */
export function isoWithOffset(date: Date): string {
  return date.toISOString().replace("Z", "+00:00");
}

/**
 * Renders an unexpected exception: the spec's default body (7.3) with status 500 and an empty
 * message. The stack goes to the log with the request id, never to the client.
 */
export function renderUnexpected(c: Context<AppEnv>, error: unknown, logger: Logger): Response {
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

/** Renders anything thrown inside a handler. */
export function renderThrown(c: Context<AppEnv>, error: unknown, logger: Logger): Response {
  if (error instanceof AppError) return renderAppError(c, error);
  return renderUnexpected(c, error, logger);
}
