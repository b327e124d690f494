import type { Router } from "hono/router";
import type { Gate } from "../security/gate.ts";
import { canonicalPath, notCanonical, rawPathOf } from "../security/target.ts";
import type { Admission } from "../security/admission.ts";
import type { Handler, Inner } from "./handler.ts";
import { accessFor } from "../security/route_access.ts";
import { addMissingHeaders } from "../lib/http/response_headers.ts";

/**
 * The HTTP listener's entry, where every request is decided once: its target is made canonical
 * (else 400), then the gate (when configured) decides from what the route that will answer
 * declares, found by asking the app's own router with that same canonical path. An admitted
 * request goes to `front` (the answers in front of the router, then the app); a refused one
 * goes straight to `app`, where the route that would have answered renders the refusal in its
 * protocol (server/gate_middleware.ts).
 * With CORS on, a request carrying `Origin` also goes to `app`, whose CORS middleware adds the
 * headers (browsers' cross-origin calls are not the hot path).
 */
export function httpEntry(
  deps: { gate: Gate | undefined; cors: boolean; router: Router<unknown> },
  front: Inner,
  app: Inner,
): Handler {
  const { gate, cors, router } = deps;

  function proceed(request: Request, admission: Admission): Response | Promise<Response> {
    const decision = admission.decision;
    if (decision?.ok === false || (cors && request.headers.has("origin"))) {
      return app(request, admission);
    }
    const headers = decision?.ok ? decision.headers : undefined;
    const response = front(request, admission);
    if (headers === undefined) return response;
    return response instanceof Promise
      ? response.then((r) => withHeaders(r, headers))
      : withHeaders(response, headers);
  }

  // Synchronous whenever the gate is (no token, or a token verified before), so that Deno.serve
  // keeps its fast path for a handler that returns a Response.
  return (request, info) => {
    const path = canonicalPath(request.url, request.headers.get("host"));
    if (path === undefined) {
      const raw = rawPathOf(request.url);
      // Charged to the address like any request (its token is not read): a client past its
      // rate limit gets 429 whatever it spells.
      const refusal = notCanonical(raw);
      const decision = gate === undefined
        ? { ok: false as const, error: refusal }
        : gate.refuse(addressOf(info), refusal);
      return app(request, { info, path: raw, decision });
    }
    if (gate === undefined) return proceed(request, { info, path, decision: undefined });
    const decision = gate.decide({
      access: accessFor(router, request.method, path).access,
      authorization: request.headers.get("authorization"),
      address: addressOf(info),
    });
    return decision instanceof Promise
      ? decision.then((d) => proceed(request, { info, path, decision: d }))
      : proceed(request, { info, path, decision });
  };
}

/** The client's address, read only if the gate needs it (reading it costs an op call). */
function addressOf(info: Deno.ServeHandlerInfo): () => string {
  return () => (info.remoteAddr as Deno.NetAddr).hostname ?? "";
}

/** Adds the gate's headers (RateLimit) unless the app already did (requests it answered). */
function withHeaders(response: Response, headers: Record<string, string>): Response {
  addMissingHeaders(response.headers, headers);
  return response;
}
