// Checks gRPC answers with an independent client (@grpc/grpc-js): CALLS concurrent calls of
// books.v1.BooksService/books to URL, each must end with grpc-status 0 (OK) and carry the same
// message bytes. Prints one JSON line: {calls, ok, failures, firstError, messageBytes, books, sha256}.
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";

const PROTO = fileURLToPath(new URL("../../rpc/proto/books/v1/books.proto", import.meta.url));
const definition = protoLoader.loadSync(PROTO, { keepCase: true, longs: Number, defaults: true });
const BooksResponse = grpc.loadPackageDefinition(definition).books.v1.BooksService.service.books;

const target = new URL(process.env.URL).host;
const calls = Number(process.env.CALLS ?? "200");
const client = new grpc.Client(target, grpc.credentials.createInsecure());
const identity = (x) => x;

function call() {
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      "/books.v1.BooksService/books",
      identity,
      identity,
      Buffer.alloc(0),
      (error, bytes) => resolve(error ? { error } : { bytes }),
    );
  });
}

const results = await Promise.all(Array.from({ length: calls }, call));
const first = results.find((r) => r.bytes)?.bytes;
let ok = 0;
let firstError = "";
for (const r of results) {
  if (r.error) firstError ||= `${grpc.status[r.error.code]}: ${r.error.details}`;
  else if (!first.equals(r.bytes)) firstError ||= "answers differ in their bytes";
  else ok++;
}
const decoded = first ? BooksResponse.responseDeserialize(first) : undefined;
client.close();
console.log(JSON.stringify({
  calls,
  ok,
  failures: calls - ok,
  firstError,
  messageBytes: first?.length ?? 0,
  books: decoded?.book.length ?? 0,
  sha256: first ? createHash("sha256").update(first).digest("hex") : "",
}));
