import type { MiddlewareHandler } from "hono";
import type { Decision, Gate } from "../lib/gate.ts";
import type { AppEnv } from "../lib/app_env.ts";
import { negotiateGraphqlType } from "../graphql/over_http.ts";
import { requestErrorResponse } from "../graphql/responses.ts";
import { type Handler, pathOf } from "./front.ts";

/** What the gate hands the app with each request: Deno.serve's info plus the decision. */
interface GatedInfo extends Deno.ServeHandlerInfo {
  decision: Decision;
}

/** The decision the front took for this request, if a gate is on. */
function decisionOf(env: unknown): Decision | undefined {
  return (env as Partial<GatedInfo> | undefined)?.decision;
}

// Connect and gRPC-Web calls on the HTTP port: a refusal is rendered by Connect itself (the
// route's interceptor), in the protocol the client speaks.
const RPC_PREFIX = "/books.v1.";

/**
 * The HTTP listener's entry: asks the gate about every request, once, before anything answers.
 * An admitted request goes to `front` (the answers in front of the router, then the app) with
 * the decision; a refused one goes straight to `app`, whose gate middleware renders the refusal
 * in the protocol of the path. With CORS on, a request carrying `Origin` also goes to `app`,
 * whose CORS middleware adds the headers (browsers' cross-origin calls are not the hot path).
 * Build it only when a gate or CORS is on: otherwise `front` is the handler and costs nothing.
 */
export function withGate(
  deps: { gate: Gate | undefined; cors: boolean },
  front: Handler,
  app: Handler,
): Handler {
  const { gate, cors } = deps;

  function proceed(
    request: Request,
    info: Deno.ServeHandlerInfo,
    decision: Decision | undefined,
  ): Response | Promise<Response> {
    const env = decision === undefined ? info : {
      remoteAddr: info.remoteAddr,
      get completed() {
        return info.completed;
      },
      decision,
    };
    if (decision?.ok === false || (cors && request.headers.has("origin"))) {
      return app(request, env);
    }
    const headers = decision?.ok ? decision.headers : undefined;
    const response = front(request, env);
    if (headers === undefined) return response;
    return response instanceof Promise
      ? response.then((r) => withHeaders(r, headers))
      : withHeaders(response, headers);
  }

  // Synchronous whenever the gate is (no token, or a token verified before), so that Deno.serve
  // keeps its fast path for a handler that returns a Response.
  return (request, info) => {
    if (gate === undefined) return proceed(request, info, undefined);
    const decision = gate.decide({
      method: request.method,
      path: pathOf(request.url),
      authorization: request.headers.get("authorization"),
      address: () => (info.remoteAddr as Deno.NetAddr).hostname ?? "",
    });
    return decision instanceof Promise
      ? decision.then((d) => proceed(request, info, d))
      : proceed(request, info, decision);
  };
}

/** Adds the gate's headers (RateLimit) unless the app already did (requests it answered). */
function withHeaders(response: Response, headers: Record<string, string>): Response {
  if (!response.headers.has("ratelimit")) {
    for (const name in headers) response.headers.set(name, headers[name]!);
  }
  return response;
}

/**
 * The app's side of the gate: sets the caller the gate decided, adds its RateLimit headers to
 * the answer, and renders a refusal per protocol: GraphQL's `errors` with `extensions.code` on
 * `/graphql`, Connect's own rendering for RPC paths (through the `refusal` variable), the REST
 * error body everywhere else.
 */
export function gateMiddleware(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const decision = decisionOf(c.env);
    if (decision === undefined) return next();
    if (!decision.ok) {
      const error = decision.error;
      const path = c.req.path;
      if (path === "/graphql" && c.req.method === "POST") {
        const type = negotiateGraphqlType(c.req.header("accept")) ?? "application/json";
        return requestErrorResponse(error, type);
      }
      if (path.startsWith(RPC_PREFIX) && (c.req.method === "POST" || c.req.method === "GET")) {
        c.set("refusal", error);
        return next();
      }
      throw error;
    }
    c.set("caller", decision.caller);
    await next();
    const headers = decision.headers;
    if (headers !== undefined) {
      for (const name in headers) c.res.headers.set(name, headers[name]!);
    }
  };
}
