import {
  create,
  createRegistry,
  type DescFile,
  type DescService,
  fromBinary,
  type Registry,
  toBinary,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import * as v1 from "../gen/grpc/reflection/v1/reflection_pb.ts";
import * as v1alpha from "../gen/grpc/reflection/v1alpha/reflection_pb.ts";

/** What reflection knows: the services of a listener and every file they need. */
interface ReflectionIndex {
  services: string[];
  registry: Registry;
  files: Map<string, DescFile>;
  encoded: Map<string, Uint8Array>;
}

function indexOf(services: readonly DescService[], more: readonly DescFile[]): ReflectionIndex {
  const files = new Map<string, DescFile>();
  const visit = (file: DescFile) => {
    if (files.has(file.proto.name)) return;
    files.set(file.proto.name, file);
    file.dependencies.forEach(visit);
  };
  for (const service of services) visit(service.file);
  more.forEach(visit);
  return {
    services: services.map((s) => s.typeName),
    registry: createRegistry(...files.values()),
    files,
    encoded: new Map(
      [...files].map(([name, file]) => [name, toBinary(FileDescriptorProtoSchema, file.proto)]),
    ),
  };
}

/** The file declaring a symbol: a type, a service, or a member (method, field, enum value). */
function fileOfSymbol(registry: Registry, symbol: string): DescFile | undefined {
  const name = symbol.replace(/^\./, "");
  const desc = registry.get(name);
  if (desc) return desc.file;
  const dot = name.lastIndexOf(".");
  if (dot < 0) return undefined;
  const parent = registry.get(name.slice(0, dot));
  const member = name.slice(dot + 1);
  switch (parent?.kind) {
    case "service":
      return parent.methods.some((m) => m.name === member) ? parent.file : undefined;
    case "message":
      return parent.fields.some((f) => f.name === member) ||
          parent.oneofs.some((o) => o.name === member)
        ? parent.file
        : undefined;
    case "enum":
      return parent.values.some((v) => v.name === member) ? parent.file : undefined;
    default:
      return undefined;
  }
}

/**
 * The file and its transitive imports, requested file first. Imports already sent on this
 * stream are left out (the protocol allows it; clients cache them); the requested file is
 * always sent.
 */
function withDependencies(index: ReflectionIndex, file: DescFile, sent: Set<string>) {
  const out: Uint8Array[] = [];
  const queue = [file];
  const seen = new Set<string>();
  while (queue.length > 0) {
    const next = queue.shift()!;
    const name = next.proto.name;
    if (seen.has(name)) continue;
    seen.add(name);
    if (out.length === 0 || !sent.has(name)) {
      sent.add(name);
      out.push(index.encoded.get(name)!);
    }
    queue.push(...next.dependencies);
  }
  return out;
}

type Answer = v1.ServerReflectionResponse["messageResponse"];

function notFound(what: string): Answer {
  return {
    case: "errorResponse",
    value: create(v1.ErrorResponseSchema, { errorCode: Code.NotFound, errorMessage: what }),
  };
}

function files(
  index: ReflectionIndex,
  file: DescFile | undefined,
  sent: Set<string>,
  what: string,
) {
  if (!file) return notFound(what);
  return {
    case: "fileDescriptorResponse" as const,
    value: create(v1.FileDescriptorResponseSchema, {
      fileDescriptorProto: withDependencies(index, file, sent),
    }),
  };
}

function answer(index: ReflectionIndex, request: v1.ServerReflectionRequest, sent: Set<string>) {
  const { registry } = index;
  const ask = request.messageRequest;
  let messageResponse: Answer;
  switch (ask.case) {
    case "listServices":
      messageResponse = {
        case: "listServicesResponse",
        value: create(v1.ListServiceResponseSchema, {
          service: index.services.map((name) => ({ name })),
        }),
      };
      break;
    case "fileByFilename":
      messageResponse = files(
        index,
        index.files.get(ask.value),
        sent,
        `File not found: ${ask.value}`,
      );
      break;
    case "fileContainingSymbol":
      messageResponse = files(
        index,
        fileOfSymbol(registry, ask.value),
        sent,
        `Symbol not found: ${ask.value}`,
      );
      break;
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = ask.value;
      const message = registry.getMessage(containingType);
      const extension = message && registry.getExtensionFor(message, extensionNumber);
      messageResponse = files(
        index,
        extension?.file,
        sent,
        `Extension not found: ${containingType} ${extensionNumber}`,
      );
      break;
    }
    case "allExtensionNumbersOfType": {
      const message = registry.getMessage(ask.value);
      if (!message) {
        messageResponse = notFound(`Type not found: ${ask.value}`);
        break;
      }
      const numbers = [...registry].flatMap((d) =>
        d.kind === "extension" && d.extendee.typeName === message.typeName ? [d.number] : []
      );
      messageResponse = {
        case: "allExtensionNumbersResponse",
        value: create(v1.ExtensionNumberResponseSchema, {
          baseTypeName: message.typeName,
          extensionNumber: numbers,
        }),
      };
      break;
    }
    default:
      messageResponse = {
        case: "errorResponse",
        value: create(v1.ErrorResponseSchema, {
          errorCode: Code.InvalidArgument,
          errorMessage: "The request sets none of the message_request fields.",
        }),
      };
  }
  return create(v1.ServerReflectionResponseSchema, {
    validHost: request.host,
    originalRequest: request,
    messageResponse,
  });
}

/** The two reflection services, v1 and its older name v1alpha, over the given services. */
export function reflectionServices(
  services: readonly DescService[],
  /** Files to describe besides the services': the error details a status may carry. */
  more: readonly DescFile[] = [],
): {
  v1: ServiceImpl<typeof v1.ServerReflection>;
  v1alpha: ServiceImpl<typeof v1alpha.ServerReflection>;
} {
  const index = indexOf(services, more);
  return {
    v1: {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const request of requests) yield answer(index, request, sent);
      },
    },
    v1alpha: {
      // v1alpha is v1 under another package name: the messages are identical on the wire.
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const request of requests) {
          const asV1 = fromBinary(
            v1.ServerReflectionRequestSchema,
            toBinary(v1alpha.ServerReflectionRequestSchema, request),
          );
          yield fromBinary(
            v1alpha.ServerReflectionResponseSchema,
            toBinary(v1.ServerReflectionResponseSchema, answer(index, asV1, sent)),
          );
        }
      },
    },
  };
}
