import { AppError } from "../errors.ts";
import { mediaTypeOf } from "./media_type.ts";
import { VENDOR_JSON, VENDOR_JSON_V2 } from "./negotiate.ts";

/** The body types a JSON write (POST, PUT) takes, in any case and with any parameters. */
export const JSON_BODY_TYPES: readonly string[] = ["application/json", VENDOR_JSON, VENDOR_JSON_V2];

/** The one body type PATCH takes: JSON Merge Patch (RFC 7396). */
export const MERGE_PATCH_JSON = "application/merge-patch+json";

const PATCH_BODY_TYPES: readonly string[] = [MERGE_PATCH_JSON];

/** The body types a write with this method takes; undefined for methods without a body. */
export function bodyTypesFor(method: string): readonly string[] | undefined {
  if (method === "POST" || method === "PUT") return JSON_BODY_TYPES;
  if (method === "PATCH") return PATCH_BODY_TYPES;
  return undefined;
}

/**
 * True when a Content-Type names a type a JSON write takes. Parameters are not judged: only the
 * media type decides, so every layer that asks gets the same answer.
 */
export function isJsonContentType(value: string | undefined | null): boolean {
  return isBodyTypeFor("POST", value);
}

/**
 * True when a Content-Type names a type a write with `method` takes (`bodyTypesFor`): the one
 * definition of an acceptable body type, for every layer that asks.
 */
export function isBodyTypeFor(method: string, value: string | undefined | null): boolean {
  const type = mediaTypeOf(value);
  return type !== undefined && (bodyTypesFor(method)?.includes(type) ?? false);
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
