// The gRPC ceiling of the runtime: a bare `node:http2` server on this Deno answering every stream
// with one gRPC frame encoded once at start (the catalogue of BOOKS_FILE, ascending id, the same
// bytes this project's server sends; the bench checks that), then `grpc-status: 0` trailers. No
// compatibility API, no routing, no checks, no log. The one thing it shares with the project's
// listener is the client-GOAWAY filter (rpc/http2/goaway_filter.ts): without it Deno 2.9.6's nghttp2
// can abort the process when h2load closes its connections (denoland/deno#36788), and a
// ceiling that crashes measures nothing. Prints one JSON `listening` line, like the server.
import http2 from "node:http2";
import { Buffer } from "node:buffer";
import type { AddressInfo } from "node:net";
import { createGoawayFilter } from "../../rpc/http2/goaway_filter.ts";
import { booksMessage } from "../books_message.ts";

const message = await booksMessage(Deno.env.get("BOOKS_FILE")!);
const frame = Buffer.alloc(5 + message.byteLength);
frame.writeUInt32BE(message.byteLength, 1);
frame.set(message, 5);

function sendTrailers(this: http2.ServerHttp2Stream) {
  this.sendTrailers({ "grpc-status": "0" });
}

const server = http2.createServer();
server.on("session", (session: http2.ServerHttp2Session) => {
  const key = Object.getOwnPropertySymbols(session).find((s) => s.description === "kHandle");
  const handle = key && (session as unknown as Record<symbol, unknown>)[key];
  const native = handle as { receive?: (chunk: Uint8Array) => unknown } | undefined;
  const receive = native?.receive;
  if (native && typeof receive === "function") {
    const filter = createGoawayFilter();
    native.receive = (chunk) => receive.call(native, filter(chunk));
  }
  session.on("error", () => {});
});
server.on("stream", (stream: http2.ServerHttp2Stream) => {
  stream.on("data", () => {});
  stream.once("end", () => {
    if (stream.destroyed) return;
    stream.respond({ ":status": 200, "content-type": "application/grpc+proto" }, {
      waitForTrailers: true,
    });
    stream.once("wantTrailers", sendTrailers);
    stream.end(frame);
  });
  stream.on("error", () => {});
});
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  console.log(JSON.stringify({ msg: "listening", grpc: `http://127.0.0.1:${port}` }));
});
Deno.addSignalListener("SIGTERM", () => {
  server.close(() => Deno.exit(0));
  setTimeout(() => Deno.exit(0), 2000);
});
