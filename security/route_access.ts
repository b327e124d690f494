import type { Router } from "hono/router";
import { type Access, accessOf, markerOf, type Refuse } from "./access.ts";

/** Methods a route may be registered for (Hono answers HEAD with the GET route). */
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
const ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

// What Hono's routers return: per matched handler, the handler with its route, then params.
type Match = [[unknown, { method: string; path: string }], unknown][];

/** The handlers of the route (not middleware) that answers `method` on `path`, in order. */
function routeHandlers(router: Router<unknown>, method: string, path: string): unknown[] {
  return routeOf(router, method, path).handlers;
}

/** The route (not middleware) that answers `method` on `path`: its handlers and its path. */
function routeOf(
  router: Router<unknown>,
  method: string,
  path: string,
): { handlers: unknown[]; path: string | undefined } {
  const matched = router.match(method === "HEAD" ? "GET" : method, path)[0] as Match;
  const handlers: unknown[] = [];
  let routePath: string | undefined;
  for (const [[handler, route]] of matched) {
    if (route.method === "ALL") continue;
    handlers.push(handler);
    routePath ??= route.path;
  }
  return { handlers, path: routePath };
}

/** The route that answers a request, as the gate needs it. */
export interface RouteMatch {
  /** What the answering route declares; for a request no route takes, see `accessFor`. */
  access: Access;
  /** True when a route takes the request (the app will not answer 404 or 405). */
  routed: boolean;
  /** The router's path of the route that answers (`/addresses/:id`); undefined when none does. */
  route?: string | undefined;
  /** How the answering route renders a refusal (security/access.ts); undefined: the REST body. */
  refuse?: Refuse | undefined;
}

/**
 * Asks the app's own router which route answers `method` on `path` (a canonical path) and
 * returns what that route declares (security/access.ts). A route without a declaration is a
 * programming error, refused like an unknown path. A request no route takes gets a 404, a 405
 * or OPTIONS' 204 from the app, which say only which methods the path has: it is as public as
 * the path's routes all are, else it needs a token (deny by default). Only the route a probe
 * declares is exempt from the rate limit: another method on a probe's path is public.
 */
export function accessFor(router: Router<unknown>, method: string, path: string): RouteMatch {
  const { handlers, path: route } = routeOf(router, method, path);
  if (handlers.length > 0) {
    for (const handler of handlers) {
      const marker = markerOf(handler);
      if (marker !== undefined) {
        return { access: marker.access, routed: true, route, refuse: marker.refuse };
      }
    }
    return { access: "authenticated", routed: true, route };
  }
  let common: Access | undefined;
  for (const other of METHODS) {
    for (const handler of routeHandlers(router, other, path)) {
      const access = accessOf(handler);
      if (access === undefined) continue;
      if (common !== undefined && common !== access) {
        return { access: "authenticated", routed: false };
      }
      common = access;
    }
  }
  if (common === "probe") return { access: "public", routed: false };
  const open = common === "public" || common === "books:read";
  return { access: open ? common! : "authenticated", routed: false };
}

/**
 * The methods a path has (for 405's `Allow` and OPTIONS), from the same router that dispatches
 * requests, so the list names exactly the methods it would route: HEAD wherever GET is, and
 * OPTIONS wherever any is. Empty when no route takes the path at all.
 */
export function allowedMethods(router: Router<unknown>, path: string): string[] {
  const methods = new Set<string>();
  for (const method of METHODS) {
    if (routeHandlers(router, method, path).length > 0) methods.add(method);
  }
  if (methods.size === 0) return [];
  if (methods.has("GET")) methods.add("HEAD");
  methods.add("OPTIONS");
  return [...methods].sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b));
}
