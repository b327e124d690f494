import { AppError } from "./errors.ts";

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
