/**
 * Calls books.v1.BooksService/books with @grpc/grpc-js, the way a new user's client would.
 *
 *   deno run --allow-net --allow-read --allow-env --allow-sys rpc/examples/grpc_js_client.ts \
 *     [--proto] [host:port]
 *
 * With `--proto` the client is built from rpc/proto/books/v1/books.proto. Without it the client
 * knows nothing about books: it asks the server's reflection service for the schema (only the
 * standard reflection.proto is needed, as grpcurl and buf curl embed it) and builds the client
 * from the answer. The target defaults to localhost:50051 (GRPC_PORT's default), plaintext.
 */
import { Buffer } from "node:buffer";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

const PROTO_DIR = new URL("../proto/", import.meta.url).pathname;

// deno-lint-ignore no-explicit-any
type Loaded = any;

/** The schema of `service` (a FileDescriptorSet), asked from the server (grpc.reflection.v1). */
export async function schemaByReflection(target: string, service: string): Promise<Buffer> {
  const definition = protoLoader.loadSync(`${PROTO_DIR}grpc/reflection/v1/reflection.proto`, {
    keepCase: true,
  });
  const pkg = grpc.loadPackageDefinition(definition) as Loaded;
  const reflection = new pkg.grpc.reflection.v1.ServerReflection(
    target,
    grpc.credentials.createInsecure(),
  );
  try {
    const answer = await new Promise<Loaded>((resolve, reject) => {
      const call = reflection.ServerReflectionInfo();
      call.on("data", resolve);
      call.on("error", reject);
      call.write({ file_containing_symbol: service });
      call.end();
    });
    if (answer.error_response) {
      throw new Error(`reflection: ${answer.error_response.error_message}`);
    }
    const files = answer.file_descriptor_response.file_descriptor_proto.map((bytes: Uint8Array) =>
      fromBinary(FileDescriptorProtoSchema, bytes)
    );
    return Buffer.from(toBinary(FileDescriptorSetSchema, {
      $typeName: "google.protobuf.FileDescriptorSet",
      file: files,
    }));
  } finally {
    reflection.close();
  }
}

if (import.meta.main) {
  const useProto = Deno.args.includes("--proto");
  const target = Deno.args.find((a) => !a.startsWith("--")) ?? "localhost:50051";
  const options = { keepCase: true, defaults: true };
  const definition = useProto
    ? protoLoader.loadSync(`${PROTO_DIR}books/v1/books.proto`, options)
    : protoLoader.loadFileDescriptorSetFromBuffer(
      await schemaByReflection(target, "books.v1.BooksService"),
      options,
    );
  const pkg = grpc.loadPackageDefinition(definition) as Loaded;
  const client = new pkg.books.v1.BooksService(target, grpc.credentials.createInsecure());
  try {
    const response = await new Promise<Loaded>((resolve, reject) =>
      client.books(
        {},
        { deadline: Date.now() + 5000 },
        (error: unknown, res: unknown) => error ? reject(error) : resolve(res),
      )
    );
    console.log(`schema from ${useProto ? "books.proto" : "server reflection"}:`);
    for (const b of response.book) {
      console.log(`${b.year}  ${b.title} (${b.author.firstName} ${b.author.lastName})`);
    }
  } finally {
    client.close();
  }
}
