import type { IncomingHttpHeaders } from "node:http";

const GRPC_TYPE = /^application\/grpc(?:-web(?:-text)?)?(?:[+;]|$)/i;
const CONNECT_TYPE = /^application\/(?:connect\+)?(?:proto|json)(?:;|$)/i;

interface RequestLike {
  url?: string | undefined;
  headers: IncomingHttpHeaders;
  /** Present on HTTP/2 requests. */
  stream?: {
    respond(headers: Record<string, string | number>, options: { endStream: boolean }): void;
  };
}

interface ResponseLike {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body: string): unknown;
  end(): unknown;
}

/**
 * Answers a path no service handles. gRPC and gRPC-Web clients get UNIMPLEMENTED as a
 * trailers-only response (status in the headers, HTTP 200, as the protocols require); Connect
 * clients get its JSON error with HTTP 404; anything else a plain 404.
 */
export function unknownMethod(req: RequestLike, res: ResponseLike): void {
  const path = (req.url ?? "/").split("?")[0]!.slice(0, 200);
  const message = `Method not found: ${path}`;
  const type = String(req.headers["content-type"] ?? "");
  if (GRPC_TYPE.test(type)) {
    const headers = {
      "content-type": type.split(";")[0]!.trim(),
      "grpc-status": "12",
      "grpc-message": percentEncode(message),
    };
    // "Trailers-only" must be one HEADERS frame that ends the stream; grpc-js reports a missing
    // status otherwise. The compatibility API's writeHead()+end() sends two frames.
    if (req.stream) req.stream.respond({ ":status": 200, ...headers }, { endStream: true });
    else {
      res.writeHead(200, headers);
      res.end();
    }
    return;
  }
  if (CONNECT_TYPE.test(type)) {
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ code: "unimplemented", message }));
    return;
  }
  res.writeHead(404, { "content-type": "text/plain; charset=utf-8" });
  res.end(`${message}\n`);
}

/**
 * gRPC's `grpc-message` encoding: bytes outside printable ASCII, and `%`, as `%XX`; the rest
 * as is (decoders such as grpc-js's do not decode `%3A` or `%2F`).
 */
function percentEncode(text: string): string {
  let out = "";
  for (const byte of new TextEncoder().encode(text)) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25
      ? String.fromCharCode(byte)
      : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
