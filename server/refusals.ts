import { Hono } from "hono";
import type { Router } from "hono/router";
import type { AppEnv } from "../lib/http/hono_env.ts";
import type { Logger } from "../lib/log.ts";
import type { Admission } from "../security/admission.ts";
import { admit } from "../security/admission.ts";
import { accessFor } from "../security/route_access.ts";
import { corsMiddleware } from "./cors.ts";
import type { Inner } from "./handler.ts";
import { renderThrown } from "./render_error.ts";

/**
 * Answers the requests the entry refused (the gate's refusals, and targets that are not
 * canonical), apart from the app, so that no route, validator or body reading can run for them:
 * a refusal does no work before it. The answer is the refusal as the route that would have
 * answered renders it (its declaration's `refuse`: GraphQL's `errors`, Connect's error in the
 * client's protocol; security/access.ts), found on the app's own router with the path the gate
 * decided on, else the REST error body. With CORS on, the CORS headers come first, so a browser
 * can read the refusal.
 */
export function createRefusals(deps: {
  /** The app's router. */
  router: Router<unknown>;
  logger: Logger;
  /** `PUBLIC_URL` without its trailing slash, for the links of error bodies. */
  publicUrl?: string | undefined;
  /** `CORS_ORIGINS`; no CORS headers when undefined. */
  corsOrigins?: "*" | string[] | undefined;
}): Inner {
  const base = deps.publicUrl ?? "";
  const refusals = new Hono<AppEnv>({
    getPath: (_request, options) => (options?.env as Admission).path,
  });
  if (deps.corsOrigins !== undefined) refusals.use("*", corsMiddleware(deps.corsOrigins));
  refusals.all("*", (c) => {
    admit(c);
    const { decision, path } = c.env as Admission;
    if (decision?.ok !== false) throw new Error("an admitted request reached the refusals");
    const refuse = accessFor(deps.router, c.req.method, path).refuse;
    if (refuse !== undefined) return refuse(c, decision.error);
    throw decision.error;
  });
  refusals.onError((error, c) => renderThrown(c, error, deps.logger, base));
  return (request, admission) => refusals.fetch(request, admission);
}
