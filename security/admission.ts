import type { Context } from "hono";
import type { AppEnv, RequestBindings } from "../lib/http/hono_env.ts";
import { requestIdFrom } from "../lib/http/request_id.ts";
import { ANONYMOUS } from "./caller.ts";
import type { Decision } from "./gate.ts";

/**
 * What a listener's entry decided about an HTTP request, handed to everything after it: the app
 * gets it as Hono's `env` (its `getPath` returns `path`; each route's declaration sets the caller
 * and request id from it), and a refusal goes to the refusals (server/refusals.ts) with it.
 */
export interface Admission extends RequestBindings {
  /**
   * The gate's decision, or the entry's refusal of a target that is not canonical; undefined
   * when no gate is configured (every caller is the anonymous owner).
   */
  decision: Decision | undefined;
}

/**
 * Sets what a route reads of its request's admission (`c.get("caller")`, `c.get("requestId")`):
 * the entry's, or without an entry (`app.request()`) the anonymous caller and the client's id.
 * Every route's access declaration calls it first (security/access.ts).
 */
export function admit(c: Context<AppEnv>): void {
  const bindings = c.env;
  if (bindings === undefined) {
    c.set("requestId", requestIdFrom(c.req.header("x-request-id")));
    c.set("caller", ANONYMOUS);
    return;
  }
  c.set("requestId", bindings.requestId);
  c.set("caller", bindings.caller);
}
