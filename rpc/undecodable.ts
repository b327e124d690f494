import { Buffer } from "node:buffer";
import type { ConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";

const PARSE_FAILURE = /^parse binary: /;
// Connect error bodies are a few hundred bytes; a body larger than this is not one to rewrite.
const MAX_ERROR_BODY = 64 * 1024;

/**
 * Registers `routes`, then makes every handler answer a Connect unary request whose body is not
 * a protobuf message with `invalid_argument` (HTTP 400) instead of `internal` (HTTP 500).
 *
 * Why: Connect-ES reports a message it cannot decode as INTERNAL ("parse binary: …"), and the
 * Connect protocol sends INTERNAL as HTTP 500, while the input was the client's mistake and a
 * client error must never be a 500 here. The decoding happens in Connect's protocol handler,
 * before any interceptor, so the answer is rewritten on its way out. gRPC and gRPC-Web carry the
 * status in-band with HTTP 200 and keep Connect's INTERNAL, as grpc-go answers too.
 */
export function withUndecodableAsInvalidArgument(
  routes: (router: ConnectRouter) => void,
): (router: ConnectRouter) => void {
  return (router) => {
    routes(router);
    // The adapters read `router.handlers` once the routes are registered.
    for (let i = 0; i < router.handlers.length; i++) {
      router.handlers[i] = undecodableAsInvalidArgument(router.handlers[i]!);
    }
  };
}

function undecodableAsInvalidArgument(handler: UniversalHandler): UniversalHandler {
  const wrapped = async (request: Parameters<UniversalHandler>[0]) => {
    const response = await handler(request);
    if (response.status !== 500) return response;
    return await rewriteParseFailure(response);
  };
  return Object.assign(wrapped, {
    protocolNames: handler.protocolNames,
    service: handler.service,
    method: handler.method,
    requestPath: handler.requestPath,
    allowedMethods: handler.allowedMethods,
    supportedContentType: handler.supportedContentType,
  });
}

async function rewriteParseFailure(
  response: UniversalServerResponse,
): Promise<UniversalServerResponse> {
  const type = response.header?.get("content-type") ?? "";
  if (
    !type.startsWith("application/json") || response.header?.has("content-encoding") ||
    response.body === undefined
  ) {
    return response;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const rest = response.body[Symbol.asyncIterator]();
  for (let next = await rest.next(); !next.done; next = await rest.next()) {
    chunks.push(next.value);
    size += next.value.byteLength;
    if (size > MAX_ERROR_BODY) {
      // Not a Connect error body: passed on as it came.
      return {
        ...response,
        body: (async function* () {
          yield* chunks;
          for (let more = await rest.next(); !more.done; more = await rest.next()) {
            yield more.value;
          }
        })(),
      };
    }
  }
  const bytes = Buffer.concat(chunks);
  let error: { code?: unknown; message?: unknown } | undefined;
  try {
    error = JSON.parse(bytes.toString());
  } catch {
    error = undefined;
  }
  const rewrite = error?.code === "internal" && typeof error.message === "string" &&
    PARSE_FAILURE.test(error.message);
  const body = rewrite
    ? new TextEncoder().encode(JSON.stringify({ ...error, code: "invalid_argument" }))
    : bytes;
  const header = new Headers(response.header);
  header.set("content-length", String(body.byteLength));
  return {
    ...response,
    status: rewrite ? 400 : response.status,
    header,
    body: (async function* () {
      yield body;
    })(),
  };
}
