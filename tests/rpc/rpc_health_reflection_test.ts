import assert from "node:assert/strict";
import { fromBinary } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import * as protoLoader from "@grpc/proto-loader";
import {
  Health,
  HealthCheckResponse_ServingStatus as Status,
} from "../../rpc/gen/grpc/health/v1/health_pb.ts";
import {
  ServerReflection,
  type ServerReflectionRequest,
} from "../../rpc/gen/grpc/reflection/v1/reflection_pb.ts";
import { schemaByReflection } from "../../rpc/examples/grpc_js_client.ts";
import {
  type GrpcJsClient,
  grpcJsClient,
  grpcJsUnary,
  grpcTransport,
  protoDefinition,
  sessionThroughShutdown,
} from "../support/rpc_clients.ts";
import { startTestServer } from "../support/server.ts";

const SERVICES = [
  "addresses.v1.AddressService",
  "books.v1.BooksService",
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
];

type Ask = ServerReflectionRequest["messageRequest"];

// deno-lint-ignore no-explicit-any
type AnyClient = any;

/** A grpc-js client of `service` as `file` (in rpc/proto/) publishes it, enums as names. */
function grpcJs(file: string, grpcUrl: string, service: string[]): GrpcJsClient & Disposable {
  return grpcJsClient(grpcUrl, {
    definition: protoDefinition(file, { enums: String }),
    service,
  });
}

/** Sends reflection requests on one stream with @grpc/grpc-js and collects the answers. */
function reflectWithGrpcJs(client: GrpcJsClient, requests: object[]): Promise<AnyClient[]> {
  return new Promise((resolve, reject) => {
    const answers: AnyClient[] = [];
    const call = client.ServerReflectionInfo();
    call.on("data", (answer: AnyClient) => answers.push(answer));
    call.on("error", reject);
    call.on("end", () => resolve(answers));
    for (const request of requests) call.write(request);
    call.end();
  });
}

Deno.test("grpc.health.v1.Health and server reflection on the gRPC listener", async (t) => {
  const server = await startTestServer();
  const transport = grpcTransport(server.grpcUrl!);
  const health = createClient(Health, transport);
  const reflection = createClient(ServerReflection, transport);
  async function reflect(...asks: Ask[]) {
    async function* requests() {
      for (const messageRequest of asks) yield { host: "localhost", messageRequest };
    }
    const answers = [];
    for await (const answer of reflection.serverReflectionInfo(requests())) answers.push(answer);
    return answers;
  }
  try {
    await t.step("Check: the server and BooksService are SERVING", async () => {
      assert.equal((await health.check({ service: "" })).status, Status.SERVING);
      assert.equal(
        (await health.check({ service: "books.v1.BooksService" })).status,
        Status.SERVING,
      );
    });

    await t.step("Check: an unknown service is NOT_FOUND", async () => {
      await assert.rejects(
        health.check({ service: "no.such.Service" }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.NotFound,
      );
    });

    await t.step(
      "Watch: the current status first; SERVICE_UNKNOWN for an unknown one",
      async () => {
        for (const [service, status] of [["", Status.SERVING], ["x.Y", Status.SERVICE_UNKNOWN]]) {
          const abort = new AbortController();
          for await (const message of health.watch({ service: service as string }, abort)) {
            assert.equal(message.status, status);
            break;
          }
          abort.abort();
        }
      },
    );

    await t.step("Check with @grpc/grpc-js and the published health.proto", async () => {
      using client = grpcJs("grpc/health/v1/health.proto", server.grpcUrl!, [
        "grpc",
        "health",
        "v1",
        "Health",
      ]);
      const answer = await grpcJsUnary<{ status: string }>(client, "Check", {
        service: "books.v1.BooksService",
      });
      assert.ifError(answer.error);
      assert.equal(answer.response!.status, "SERVING");
    });

    await t.step("reflection v1: list_services names exactly the served services", async () => {
      const [answer] = await reflect({ case: "listServices", value: "*" });
      assert.equal(answer?.messageResponse.case, "listServicesResponse");
      const names = answer.messageResponse.value.service.map((s: { name: string }) => s.name);
      assert.deepEqual(names.toSorted(), SERVICES);
      assert.equal(answer.validHost, "localhost");
      assert.equal(answer.originalRequest?.messageRequest.case, "listServices");
    });

    await t.step("reflection v1: BooksService's file descriptor is the books schema", async () => {
      const answers = await reflect(
        { case: "fileContainingSymbol", value: "books.v1.BooksService" },
        { case: "fileContainingSymbol", value: "books.v1.BooksService.books" },
        { case: "fileContainingSymbol", value: "books.v1.BookProto" },
        { case: "fileByFilename", value: "books/v1/books.proto" },
      );
      assert.equal(answers.length, 4);
      for (const answer of answers) {
        assert.equal(answer.messageResponse.case, "fileDescriptorResponse");
        // The requested file is sent every time, even when sent before on the stream.
        assert.equal(answer.messageResponse.value.fileDescriptorProto.length, 1);
      }
      const value = answers[0]!.messageResponse.value as { fileDescriptorProto: Uint8Array[] };
      const file = fromBinary(FileDescriptorProtoSchema, value.fileDescriptorProto[0]!);
      assert.equal(file.name, "books/v1/books.proto");
      assert.equal(file.package, "books.v1");
      const service = file.service[0]!;
      assert.equal(service.name, "BooksService");
      assert.deepEqual(
        service.method.map((m) => [m.name, m.inputType, m.outputType]),
        [["books", ".books.v1.BooksRequest", ".books.v1.BooksResponse"]],
      );
      const fields = Object.fromEntries(
        file.messageType.map((m) => [
          m.name,
          m.field.map((f) => [f.name, f.number, FieldDescriptorProto_Type[f.type]]),
        ]),
      );
      assert.deepEqual(fields, {
        BooksRequest: [],
        AuthorProto: [["firstName", 1, "STRING"], ["lastName", 2, "STRING"]],
        BookProto: [["title", 1, "STRING"], ["author", 2, "MESSAGE"], ["year", 3, "INT32"]],
        BooksResponse: [["book", 1, "MESSAGE"]],
      });
      const book = file.messageType.find((m) => m.name === "BooksResponse")!.field[0]!;
      assert.equal(book.label, FieldDescriptorProto_Label.REPEATED);
      assert.equal(book.typeName, ".books.v1.BookProto");
    });

    await t.step(
      "reflection v1: unknown names are NOT_FOUND answers, the stream goes on",
      async () => {
        const answers = await reflect(
          { case: "fileContainingSymbol", value: "no.such.Symbol" },
          { case: "fileByFilename", value: "no/such.proto" },
          { case: "allExtensionNumbersOfType", value: "no.such.Message" },
          { case: "allExtensionNumbersOfType", value: "books.v1.BookProto" },
        );
        for (const answer of answers.slice(0, 3)) {
          assert.equal(answer.messageResponse.case, "errorResponse");
          assert.equal(answer.messageResponse.value.errorCode, Code.NotFound);
        }
        assert.equal(answers[3]?.messageResponse.case, "allExtensionNumbersResponse");
        assert.deepEqual(answers[3].messageResponse.value.extensionNumber, []);
      },
    );

    await t.step("reflection v1alpha with @grpc/grpc-js: list and resolve", async () => {
      using client = grpcJs(
        "grpc/reflection/v1alpha/reflection.proto",
        server.grpcUrl!,
        ["grpc", "reflection", "v1alpha", "ServerReflection"],
      );
      const [list, found] = await reflectWithGrpcJs(client, [
        { list_services: "" },
        { file_containing_symbol: "books.v1.BooksService" },
      ]);
      assert.deepEqual(
        list.list_services_response.service.map((s: AnyClient) => s.name).sort(),
        SERVICES,
      );
      const file = fromBinary(
        FileDescriptorProtoSchema,
        found.file_descriptor_response.file_descriptor_proto[0],
      );
      assert.equal(file.name, "books/v1/books.proto");
    });

    await t.step(
      "a generic client calls books without the .proto file (like grpcurl)",
      async () => {
        // rpc/examples/grpc_js_client.ts: only the standard reflection.proto is on disk.
        const target = new URL(server.grpcUrl!).host;
        const definition = protoLoader.loadFileDescriptorSetFromBuffer(
          await schemaByReflection(target, "books.v1.BooksService"),
          { keepCase: true },
        );
        using books = grpcJsClient(server.grpcUrl!, { definition });
        const answer = await grpcJsUnary<AnyClient>(books, "books");
        assert.ifError(answer.error);
        const res = answer.response;
        const rest = await (await fetch(`${server.httpUrl}/rest/books`)).json();
        assert.equal(res.book.length, rest.length);
        assert.deepEqual(res.book[0], {
          title: rest[0].title,
          year: rest[0].year,
          author: rest[0].author,
        });
      },
    );
  } finally {
    await server.close();
  }
});

Deno.test("Health.Watch reports NOT_SERVING at shutdown, then ends with UNAVAILABLE", async () => {
  const server = await startTestServer();
  // Open while the server shuts down, which is what this test watches; closed when it ends.
  using session = sessionThroughShutdown(server.grpcUrl!);
  const health = createClient(Health, grpcTransport(server.grpcUrl!, session));
  const seen: (Status | string)[] = [];
  let first: () => void = () => {};
  const started = new Promise<void>((resolve) => (first = resolve));
  const watching = (async () => {
    try {
      for await (const message of health.watch({ service: "books.v1.BooksService" })) {
        seen.push(message.status);
        first();
      }
      seen.push("ended without a status");
    } catch (error) {
      seen.push(error instanceof ConnectError ? Code[error.code] : String(error));
    }
  })();
  try {
    await started;
    await server.close();
    await watching;
    assert.deepEqual(seen, [Status.SERVING, Status.NOT_SERVING, "Unavailable"]);
    const line = server.logs.find((l) => l.procedure === "grpc.health.v1.Health/Watch");
    assert.equal(line?.code, "Unavailable");
  } finally {
    await server.close();
  }
});
