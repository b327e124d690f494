// The gRPC ceiling of the runtime: a bare `node:http2` server on this Deno answering every stream
// with one gRPC frame encoded once at start (the catalogue of BOOKS_FILE, ascending id, the same
// bytes this project's server sends; the bench checks that), then `grpc-status: 0` trailers. No
// compatibility API, no routing, no checks, no log. The one thing it shares with the project's
// listener is the client-GOAWAY filter (bare_http2_server.ts). Prints one JSON `listening` line,
// like the server.
import http2 from "node:http2";
import { Buffer } from "node:buffer";
import { serveBareHttp2 } from "./bare_http2_server.ts";
import { booksMessage } from "../books_message.ts";

const message = await booksMessage(Deno.env.get("BOOKS_FILE")!);
const frame = Buffer.alloc(5 + message.byteLength);
frame.writeUInt32BE(message.byteLength, 1);
frame.set(message, 5);

function sendTrailers(this: http2.ServerHttp2Stream) {
  this.sendTrailers({ "grpc-status": "0" });
}

serveBareHttp2((stream) => {
  stream.on("data", () => {});
  stream.once("end", () => {
    if (stream.destroyed) return;
    stream.respond({ ":status": 200, "content-type": "application/grpc+proto" }, {
      waitForTrailers: true,
    });
    stream.once("wantTrailers", sendTrailers);
    stream.end(frame);
  });
});
