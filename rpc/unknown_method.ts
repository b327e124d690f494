import type { IncomingHttpHeaders } from "node:http";

const GRPC_TYPE = /^application\/grpc(?:-web(?:-text)?)?(?:[+;]|$)/i;
const CONNECT_TYPE = /^application\/(?:connect\+)?(?:proto|json)(?:;|$)/i;

interface RequestLike {
  url?: string | undefined;
  headers: IncomingHttpHeaders;
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
    res.writeHead(200, {
      "content-type": type.split(";")[0]!.trim(),
      "grpc-status": "12",
      "grpc-message": encodeURIComponent(message),
    });
    res.end();
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
