// The standard Node gRPC server: @grpc/grpc-js with @grpc/proto-loader on the project's .proto,
// serving the same catalogue (BOOKS_FILE) over HTTP/2 cleartext. Run with `node`; it resolves
// the packages from the project's node_modules. Prints one JSON `listening` line.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";

const PROTO = fileURLToPath(new URL("../../rpc/proto/books/v1/books.proto", import.meta.url));
const definition = protoLoader.loadSync(PROTO, { keepCase: true, longs: Number, defaults: true });
const { BooksService } = grpc.loadPackageDefinition(definition).books.v1;

const books = JSON.parse(readFileSync(process.env.BOOKS_FILE, "utf8"))
  .sort((a, b) => a.id - b.id)
  .map((b) => ({ title: b.title, author: b.author, year: b.year }));
const response = { book: books };

const server = new grpc.Server();
server.addService(BooksService.service, { books: (_call, callback) => callback(null, response) });
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  console.log(JSON.stringify({ msg: "listening", grpc: `http://127.0.0.1:${port}` }));
});
process.on("SIGTERM", () => server.tryShutdown(() => process.exit(0)));
