import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { createConnectRouter, createContextValues } from "@connectrpc/connect";
import { universalServerResponseToFetch } from "@connectrpc/connect/protocol";
import { completeAnswer } from "../../lib/http/response_headers.ts";
import { AppError } from "../../lib/errors.ts";
import type { Logger } from "../../lib/log.ts";
import type { AppEnv } from "../../lib/http/hono_env.ts";
import { requestIdKey } from "./interceptor.ts";
import { callerKey } from "./caller.ts";
import { appConnectError } from "./errors.ts";
import { rpcErrorAnswer } from "./error_answer.ts";
import { appRoutes, type AppStores, handlerOptions, procedureOf, rpcAccess } from "./router.ts";
import { declared } from "../../security/access.ts";
import { admit } from "../../security/admission.ts";
import { withLongTimeoutsUnbounded } from "./long_timeouts.ts";
import { withRaisedErrorsMapped } from "./raised_errors.ts";
import { recordUnaryMethods } from "../unary/unary_methods.ts";
import { fetchUnary, withEntryHeaders } from "../unary/fetch_unary.ts";

/**
 * Serves the application services over Connect and gRPC-Web on the main HTTP port, at
 * `/books.v1.BooksService/books` and `/addresses.v1.AddressService/…`. Native gRPC is not offered here: it ends every response with
 * HTTP trailers, which a fetch-based server (Deno.serve) cannot send, so it lives on the gRPC
 * listener. Each procedure is an ordinary Hono route, so 404 and 405 (with `Allow`) for its
 * path come from the app's own route table.
 */
export function rpcRoutes(
  app: OpenAPIHono<AppEnv>,
  deps: AppStores & {
    logger: Logger;
    /** false: every call through Connect's handler (the side-by-side tests' reference). */
    leanUnary?: boolean;
  },
): void {
  const options = { grpc: false, ...handlerOptions({ logger: deps.logger, accessLog: false }) };
  const router = createConnectRouter(options);
  // Unary calls take the lean path (rpc/unary/fetch_unary.ts) with the services this router
  // registers; everything else is Connect's.
  const unary = recordUnaryMethods(
    withRaisedErrorsMapped(withLongTimeoutsUnbounded(appRoutes(deps))),
    options,
  );
  unary.routes(router);
  for (const handler of router.handlers) {
    const access = rpcAccess(procedureOf(handler.service, handler.method));
    if (access === "authenticated") {
      throw new Error(`no access declared for ${handler.requestPath}`);
    }
    const method = unary.methods.byPath.get(handler.requestPath);
    const lean = method && deps.leanUnary !== false
      ? fetchUnary(method, unary.methods.options)
      : undefined;
    const contextValues = (c: Context<AppEnv>) =>
      createContextValues()
        .set(requestIdKey, c.get("requestId"))
        .set(callerKey, c.get("caller"));
    const connect = async (
      c: Context<AppEnv>,
      body: AsyncIterable<Uint8Array> | undefined,
    ): Promise<Response> => {
      const request = c.req.raw;
      // Built by hand rather than with Connect's universalServerRequestFromFetch: that one reads
      // `request.signal`, which Deno.serve aborts after every successful response (with a
      // warning on stderr); the signal here aborts only when the client goes away.
      const response = await handler({
        httpVersion: "", // not known to a fetch handler; Connect only uses it to refuse bidi on 1.x
        method: request.method,
        url: request.url,
        header: request.headers,
        body: body ?? request.body ?? EMPTY_BODY,
        signal: disconnectSignal(c.env?.info),
        contextValues: contextValues(c),
      });
      if (response.body === undefined) refuseBare(response.status, request);
      const answer = universalServerResponseToFetch(response);
      return withEntryHeaders(answer.headers) ? completeAnswer(answer) : answer;
    };
    // One handler per route, which is also its access declaration (as server/operations.ts
    // registers REST's): Hono calls it directly, with no middleware chain around the call.
    const serve = (c: Context<AppEnv>): Promise<Response> => {
      admit(c);
      return lean?.(c.req.raw, contextValues(c), (bytes) => connect(c, once(bytes))) ??
        connect(c, undefined);
    };
    app.on(handler.allowedMethods, handler.requestPath, declared(serve, access, refuseCall));
  }
}

/**
 * The gate's refusal of a call, in the protocol the client speaks, from its method and
 * Content-Type alone (rpc/connect/error_answer.ts): Connect never sees the call, so nothing of
 * its body is read, inflated or parsed. A request in no RPC protocol gets the error model's
 * answer like any other HTTP request.
 */
function refuseCall(c: Context, error: AppError): Response {
  const request = c.req.raw;
  const type = request.headers.get("content-type") ?? "";
  const answer = rpcErrorAnswer(request.method, type, appConnectError(error));
  if (answer === undefined) throw error;
  return new Response(answer.body, { status: answer.status, headers: answer.headers });
}

/**
 * Connect answers a request that speaks none of its protocols (a content type it does not know,
 * a GET without `encoding` and `message`) with a bare status and no body. That request is not an
 * RPC, so it gets the error model's answer like any other HTTP request.
 */
function refuseBare(status: number, request: Request): void {
  if (status === 415) {
    const type = request.headers.get("content-type");
    throw new AppError(
      "unsupported-media-type",
      (type
        ? `Content-Type ${type.slice(0, 100)} is not an RPC protocol here`
        : request.method === "GET"
        ? "A Connect GET needs the encoding and message query parameters"
        : "The request has no Content-Type") +
        "; send Connect (application/proto, application/json) or gRPC-Web " +
        "(application/grpc-web+proto).",
    );
  }
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

const EMPTY_BODY: AsyncIterable<Uint8Array> = {
  async *[Symbol.asyncIterator]() {},
};

/** Aborts when the response could not be delivered (Deno.serve's `completed` rejects). */
function disconnectSignal(info: Deno.ServeHandlerInfo | undefined): AbortSignal {
  const controller = new AbortController();
  info?.completed.catch(() => controller.abort());
  return controller.signal;
}
