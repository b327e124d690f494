import type { Context, MiddlewareHandler } from "hono";
import type { AppError } from "../lib/errors.ts";
import type { AppEnv } from "../lib/http/hono_env.ts";
import { admit } from "./admission.ts";

/** Scopes a token may grant (docs/security.md, "Authentication"). */
export type Scope = "books:read" | "addresses:read" | "addresses:write";

/**
 * What a route needs from its caller, declared where the route is defined:
 * - `probe`: nothing, not even a rate-limit token (liveness, readiness, gRPC health);
 * - `public`: no token (a bad one is still refused), rate-limited;
 * - `books:read`: public unless `AUTH_BOOKS=required`, which then needs the scope;
 * - `addresses:read`, `addresses:write`: a token with that scope when authentication is on;
 * - `authenticated`: any valid token. Not declared by routes: it is what the gate asks of a
 *   request no route takes (deny by default), unless every route of its path is public.
 */
export type Access = "probe" | "public" | Scope | "authenticated";

/**
 * How a route's protocol answers a call the gate refused (GraphQL's `errors`, Connect's error in
 * the client's protocol). Without one the refusal is the REST error body.
 */
export type Refuse = (c: Context, error: AppError) => Response | Promise<Response>;

/** A route's declaration: a Hono handler that does nothing but carry the access. */
export type AccessMarker = MiddlewareHandler & {
  readonly access: Access;
  readonly refuse: Refuse | undefined;
};

/** The access a handler declares, if it is a marker. */
export function accessOf(handler: unknown): Access | undefined {
  return markerOf(handler)?.access;
}

/** The handler as a marker, if it is one. */
export function markerOf(handler: unknown): AccessMarker | undefined {
  return typeof handler === "function" && "access" in handler ? handler as AccessMarker : undefined;
}

/**
 * The declaration placed first in a route's handler chain (`app.get(path, requires("public"),
 * …)`). The gate finds it by asking the app's router which route answers a request, so what the
 * gate decides on and what the router dispatches are the same route; a refusal is answered by the
 * route's `refuse` (server/refusals.ts), so each protocol renders its own. An admitted request
 * passes it: it sets the caller and request id the entry decided (security/admission.ts).
 */
export function requires(access: Exclude<Access, "authenticated">, refuse?: Refuse): AccessMarker {
  const marker: MiddlewareHandler<AppEnv> = (c, next) => {
    admit(c);
    return next();
  };
  return declared(marker, access, refuse);
}

/**
 * `handler` as a route's declaration: the gate reads `access` from it and a refusal is answered by
 * `refuse`. For a route whose one handler is also its declaration (server/operations.ts), which
 * calls `admit` itself.
 */
export function declared<H extends MiddlewareHandler<AppEnv>>(
  handler: H,
  access: Access,
  refuse: Refuse | undefined,
): H & AccessMarker {
  return Object.assign(handler, { access, refuse }) as H & AccessMarker;
}

/**
 * OpenAPI `security` of an operation with this access (scheme `bearerAuth`). A bearer scheme
 * has no scopes to list (only OAuth2 flows do, and tokens here come from any issuer), so the
 * scope travels as the operation's `x-scopes`.
 */
export function securityOf(access: Exclude<Access, "authenticated">): Record<string, string[]>[] {
  switch (access) {
    case "probe":
    case "public":
      return [];
    case "books:read":
      // Optional: only `AUTH_BOOKS=required` asks for it.
      return [{}, { bearerAuth: [] }];
    default:
      return [{ bearerAuth: [] }];
  }
}

/**
 * Both halves of a zod-openapi route's declaration, spread into `createRoute`: the marker the
 * gate reads (`middleware`, left out of the document), and the `security` and `x-scopes` the
 * document shows.
 */
export function routeAccess(access: Exclude<Access, "authenticated">): {
  middleware: AccessMarker;
  security: Record<string, string[]>[];
  "x-scopes"?: string[];
} {
  const documented = access === "probe" || access === "public" ? {} : { "x-scopes": [access] };
  return { middleware: requires(access), security: securityOf(access), ...documented };
}
