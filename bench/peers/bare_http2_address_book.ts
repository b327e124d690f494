// The matrix's gRPC ceiling: a bare `node:http2` server on this Deno answering
// `addresses.v1.AddressService` straight from Deno KV (address_book_kv.ts), each call's message
// decoded and its answer encoded with the generated protobuf code (address_book_rpc.ts), then
// `grpc-status: 0` trailers; a call that finds no address is answered trailers-only with
// NOT_FOUND. No compatibility API, no routing table, no checks, no log; like bare_http2.ts it
// shares the client-GOAWAY filter with this project's listener (bare_http2_server.ts). KV_PATH
// names a copy of the KV file the server reads; V1_KEPT the fields a version 1 replace keeps.
// Prints one JSON `listening` line, like the server.
import http2 from "node:http2";
import { Buffer } from "node:buffer";
import { serveBareHttp2 } from "./bare_http2_server.ts";
import { openAddressBook } from "./address_book_kv.ts";
import { addressCall, RpcStatus } from "./address_book_rpc.ts";

const SERVICE = "/addresses.v1.AddressService/";

const kv = await Deno.openKv(Deno.env.get("KV_PATH")!);
const book = await openAddressBook(
  kv,
  (Deno.env.get("V1_KEPT") ?? "").split(",").filter((n) => n !== ""),
);

function sendTrailers(this: http2.ServerHttp2Stream) {
  this.sendTrailers({ "grpc-status": "0" });
}

async function answer(stream: http2.ServerHttp2Stream, path: string, body: Buffer) {
  let message: Uint8Array;
  try {
    if (!path.startsWith(SERVICE)) throw new RpcStatus(12);
    message = await addressCall(book, path.slice(SERVICE.length), body.subarray(5));
  } catch (error) {
    const code = error instanceof RpcStatus ? error.code : 13;
    if (!stream.destroyed) {
      stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": code }, {
        endStream: true,
      });
    }
    return;
  }
  if (stream.destroyed) return;
  const frame = Buffer.alloc(5 + message.byteLength);
  frame.writeUInt32BE(message.byteLength, 1);
  frame.set(message, 5);
  stream.respond({ ":status": 200, "content-type": "application/grpc" }, {
    waitForTrailers: true,
  });
  stream.once("wantTrailers", sendTrailers);
  stream.end(frame);
}

serveBareHttp2((stream, headers) => {
  const chunks: Buffer[] = [];
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  stream.once("end", () => {
    void answer(stream, String(headers[":path"]), Buffer.concat(chunks));
  });
});
