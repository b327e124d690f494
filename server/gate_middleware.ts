import type { MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { AppEnv } from "../lib/http/hono_env.ts";
import { markerOf } from "../security/access.ts";
import { addMissingHeaders } from "../lib/http/response_headers.ts";

/**
 * The app's side of the entry (server/entry.ts): sets the caller the gate decided and adds its
 * RateLimit headers to the answer. A refusal (the gate's, or the entry's of a target that is not
 * canonical) is answered before anything else runs: by the `refuse` the route that would have
 * answered declares with its access (GraphQL's `errors`, Connect's error in the client's
 * protocol), else as the REST error body. This module knows no protocol.
 */
export function gateMiddleware(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const decision = c.env?.decision;
    if (decision === undefined) return next();
    if (!decision.ok) {
      for (const route of matchedRoutes(c)) {
        const refuse = route.method === "ALL" ? undefined : markerOf(route.handler)?.refuse;
        if (refuse !== undefined) return refuse(c, decision.error);
      }
      throw decision.error;
    }
    c.set("caller", decision.caller);
    await next();
    if (decision.headers !== undefined) addMissingHeaders(c.res.headers, decision.headers);
  };
}
