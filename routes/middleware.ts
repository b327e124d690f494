import type { MiddlewareHandler } from "hono";
import { AppError } from "../lib/errors.ts";
import { type Logger, msSince } from "../lib/log.ts";
import { requestIdFrom } from "../lib/request_id.ts";
import type { AppEnv } from "./env.ts";

/**
 * Sets `X-Request-Id` on every response (the client's when well-formed, else a new UUID) and
 * writes one JSON access-log line per request. The query string is not logged: it may carry
 * things that do not belong in logs.
 */
export function requestContext(logger: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    const requestId = requestIdFrom(c.req.header("x-request-id"));
    c.set("requestId", requestId);
    await next();
    // Hot handlers put the id into the headers they build: changing the headers of a finished
    // Response costs Deno.serve its fast path.
    if (!c.res.headers.has("x-request-id")) c.res.headers.set("x-request-id", requestId);
    logger.request({
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      durationMs: msSince(started),
      requestId,
    });
  };
}

const JSON_TYPE = /^application\/(?:[a-z0-9.+-]+\+)?json\s*(?:;.*)?$/i;

/** True for `application/json` and `application/*+json`, with any parameters. */
export function isJsonContentType(value: string | undefined): boolean {
  return value !== undefined && JSON_TYPE.test(value.trim());
}

/**
 * Reads a request body, 413 above `limit` bytes: at once when Content-Length says so (the HTTP
 * server enforces that framing, so such a body is read whole), else while streaming.
 */
export async function readBodyLimited(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared === null) return await readLimited(request.body, limit);
  if (Number(declared) > limit) throw tooLarge(limit);
  return new Uint8Array(await request.arrayBuffer());
}

/** Reads a body stream, failing with 413 as soon as it exceeds `limit` bytes. */
async function readLimited(body: ReadableStream<Uint8Array> | null, limit: number) {
  if (body === null) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

function tooLarge(limit: number): AppError {
  return new AppError("payload-too-large", `The request body is larger than ${limit} bytes.`);
}

/**
 * Guards JSON writes (POST, PUT): 415 without a JSON content type, 413 above `limit`
 * bytes, 400 `invalid-body` for anything that is not a JSON object. The parsed text is handed
 * to Hono's body cache so the route's zod validator reads it without touching the stream again.
 */
export function jsonObjectBody(limit: number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const method = c.req.method;
    if (method !== "POST" && method !== "PUT") return next();
    const type = c.req.header("content-type");
    if (!isJsonContentType(type)) {
      throw new AppError(
        "unsupported-media-type",
        type
          ? `Content-Type ${type.slice(0, 100)} is not supported; send application/json.`
          : "The request has no Content-Type; send application/json.",
      );
    }
    const bytes = await readBodyLimited(c.req.raw, limit);
    let text: string;
    let value: unknown;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      value = JSON.parse(text);
    } catch (error) {
      const reason = bytes.length === 0
        ? "The request body is empty."
        : `The request body is not valid JSON: ${
          error instanceof Error ? error.message.slice(0, 200) : "parse error"
        }`;
      throw new AppError("invalid-body", reason);
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      const kind = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
      throw new AppError("invalid-body", `The request body must be a JSON object, not ${kind}.`);
    }
    // Hono's cache holds promises at run time though its type says otherwise; tests cover this.
    (c.req.bodyCache as Record<string, unknown>).text = Promise.resolve(text);
    await next();
  };
}
