/**
 * Clients that send a request exactly as written, which `fetch` does not (it resolves dot
 * segments, drops fragments, re-encodes, chooses `Host` itself and speaks HTTP/2 only over TLS):
 * HTTP/1.1 over a plain socket, and HTTP/2 through node:http2 (h2c, with prior knowledge). For
 * tests of how the server reads odd spellings, and of the gRPC listener byte by byte.
 */
import { Buffer } from "node:buffer";
import http2 from "node:http2";
import { type RawSession, rawSession } from "./rpc_clients.ts";

/** What came back, as the tests compare it. */
export interface RawResponse {
  status: number;
  headers: Headers;
  body: string;
}

/** A request with its target verbatim (`/%61ddresses`, `/addresses#`, `/a/../b`). */
export interface RawRequest {
  method: string;
  target: string;
  /** As a list, a name may repeat (HTTP/1.1 sends each line; HTTP/2 clients refuse that). */
  headers?: Record<string, string> | [string, string][];
  body?: string | Uint8Array;
}

function fieldsOfRequest(request: RawRequest): [string, string][] {
  const headers = request.headers ?? {};
  return Array.isArray(headers) ? headers : Object.entries(headers);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Sends one HTTP/1.1 request on a new connection (`Connection: close`) and reads the answer.
 * `Host` is that of `base` unless the request's headers name one.
 */
export async function rawHttp1(base: string, request: RawRequest): Promise<RawResponse> {
  const { hostname, port, host } = new URL(base);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  try {
    const body = typeof request.body === "string" ? encoder.encode(request.body) : request.body;
    const fields = fieldsOfRequest(request);
    const named = fields.some(([n]) => n.toLowerCase() === "host");
    let head = `${request.method} ${request.target} HTTP/1.1\r\n` +
      (named ? "" : `host: ${host}\r\n`) + "connection: close\r\n";
    for (const [name, value] of fields) {
      head += `${name}: ${value}\r\n`;
    }
    if (body !== undefined) head += `content-length: ${body.byteLength}\r\n`;
    await writeAll(conn, encoder.encode(head + "\r\n"));
    if (body !== undefined) await writeAll(conn, body);
    const bytes = await readAll(conn);
    return parseResponse(bytes, request.method === "HEAD");
  } finally {
    try {
      conn.close();
    } catch { /* closed by the server */ }
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let written = 0; written < bytes.byteLength;) {
    written += await conn.write(bytes.subarray(written));
  }
}

async function readAll(conn: Deno.Conn): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  const buffer = new Uint8Array(64 * 1024);
  for (;;) {
    let n: number | null;
    try {
      n = await conn.read(buffer);
    } catch {
      break; // reset by the server after its answer
    }
    if (n === null) break;
    chunks.push(buffer.slice(0, n));
  }
  return Buffer.concat(chunks);
}

function parseResponse(bytes: Uint8Array, isHead: boolean): RawResponse {
  const text = decoder.decode(bytes);
  const end = text.indexOf("\r\n\r\n");
  if (end === -1) {
    throw new Error(`no complete response head: ${JSON.stringify(text.slice(0, 200))}`);
  }
  const [statusLine, ...lines] = text.slice(0, end).split("\r\n");
  const status = Number(/^HTTP\/1\.[01] ([0-9]{3})/.exec(statusLine!)?.[1]);
  const headers = new Headers();
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  let body = isHead ? "" : text.slice(end + 4);
  if (headers.get("transfer-encoding")?.includes("chunked")) body = dechunk(body);
  return { status, headers, body };
}

function dechunk(text: string): string {
  let out = "";
  for (let at = 0;;) {
    const eol = text.indexOf("\r\n", at);
    if (eol === -1) return out;
    const size = parseInt(text.slice(at, eol), 16);
    if (!(size > 0)) return out;
    out += text.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}

/** An HTTP/2 answer: the response headers and the trailers apart, and both as `fields`. */
interface H2Answer {
  status: number;
  headers: Headers;
  trailers: Headers;
  /** Headers and trailers together (a gRPC status comes in either). */
  fields: Headers;
  body: Buffer;
}

function fieldsOf(...blocks: http2.IncomingHttpHeaders[]): Headers {
  const out = new Headers();
  for (const block of blocks) {
    for (const [name, value] of Object.entries(block)) {
      if (name.startsWith(":") || value === undefined) continue;
      out.set(name, Array.isArray(value) ? value.join(", ") : String(value));
    }
  }
  return out;
}

/**
 * Sends one request on `session`, its target as `:path` verbatim, and reads the whole answer
 * (failing after `timeoutMs` when given). Throws at once, before any promise, when node:http2
 * refuses the request's header fields themselves.
 */
export function h2Request(
  session: http2.ClientHttp2Session,
  request: RawRequest,
  timeoutMs?: number,
): Promise<H2Answer> {
  const stream = session.request({
    ":method": request.method,
    ":path": request.target,
    ...Object.fromEntries(fieldsOfRequest(request)),
  }, { endStream: request.body === undefined });
  return new Promise((resolve, reject) => {
    let status = 0;
    let headers: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => {
      stream.close(http2.constants.NGHTTP2_CANCEL);
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      headers = h;
    });
    stream.on("trailers", (t) => (trailers = t));
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    stream.on("end", () => {
      clearTimeout(timer);
      resolve({
        status,
        headers: fieldsOf(headers),
        trailers: fieldsOf(trailers),
        fields: fieldsOf(headers, trailers),
        body: Buffer.concat(chunks),
      });
    });
    if (request.body !== undefined) stream.end(request.body);
  });
}

/** One POST as gRPC clients send it (`te: trailers`): status, headers and trailers, body. */
export function h2Post(
  session: http2.ClientHttp2Session,
  target: string,
  headers: Record<string, string>,
  body: Uint8Array,
): Promise<H2Answer> {
  return h2Request(session, {
    method: "POST",
    target,
    headers: { te: "trailers", ...headers },
    body: Buffer.from(body),
  });
}

/** One HTTP/2 cleartext connection that sends `:path` as written. */
interface H2Client {
  request(request: RawRequest): Promise<RawResponse>;
  close(): void;
}

/**
 * Opens an h2c connection (prior knowledge) to `base`, and a new one whenever the server ended
 * the last (an HTTP/2 stack may answer a malformed `:path` with a connection error).
 */
export function h2c(base: string): H2Client {
  let session: RawSession | undefined;
  function current(): RawSession {
    if (session === undefined || session.destroyed || session.closed) session = rawSession(base);
    return session;
  }
  return {
    async request(request) {
      const answer = await h2Request(current(), request);
      return { status: answer.status, headers: answer.fields, body: answer.body.toString("utf8") };
    },
    close: () => session?.close(),
  };
}
