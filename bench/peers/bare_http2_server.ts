// A bare node:http2 server as the gRPC ceilings run it (bare_http2.ts, bare_http2_address_book.ts):
// cleartext HTTP/2 on a free port of 127.0.0.1, every stream handed to the peer, one JSON
// `listening` line printed like the server's, stopped by SIGTERM. The one thing it shares with this
// project's gRPC listener is the client-GOAWAY filter (rpc/http2/goaway_filter.ts) in front of each
// session's native handle: without it Deno 2.9.6's nghttp2 can abort the process when a client
// closes its connections (denoland/deno#36788), and a ceiling that crashes measures nothing.
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { createGoawayFilter } from "../../rpc/http2/goaway_filter.ts";

function filterClientGoaway(session: http2.ServerHttp2Session): void {
  const key = Object.getOwnPropertySymbols(session).find((s) => s.description === "kHandle");
  const handle = key && (session as unknown as Record<symbol, unknown>)[key];
  const native = handle as { receive?: (chunk: Uint8Array) => unknown } | undefined;
  const receive = native?.receive;
  if (native && typeof receive === "function") {
    const filter = createGoawayFilter();
    native.receive = (chunk) => receive.call(native, filter(chunk));
  }
}

/** Serves every stream with `onStream` until SIGTERM. */
export function serveBareHttp2(
  onStream: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void,
): void {
  const server = http2.createServer();
  server.on("session", (session: http2.ServerHttp2Session) => {
    filterClientGoaway(session);
    session.on("error", () => {});
  });
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    stream.on("error", () => {});
    onStream(stream, headers);
  });
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo;
    console.log(JSON.stringify({ msg: "listening", grpc: `http://127.0.0.1:${port}` }));
  });
  Deno.addSignalListener("SIGTERM", () => {
    server.close(() => Deno.exit(0));
    setTimeout(() => Deno.exit(0), 2000);
  });
}
