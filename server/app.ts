import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { AppError } from "../lib/errors.ts";
import type { Logger } from "../lib/log.ts";
import type { Store } from "../store/store.ts";
import type { StorageHealth } from "../store/kv/storage_health.ts";
import { addressRoutes } from "../routes/addresses.ts";
import { ownerDataRoutes } from "../routes/owner_data.ts";
import { addressEventsRoutes, type EventsDoorOptions } from "../routes/address_events.ts";
import { booksRoutes } from "../routes/books.ts";
import { docsRoutes } from "../routes/docs.ts";
import { homeRoutes } from "../routes/home.ts";
import type { AppEnv } from "../lib/http/hono_env.ts";
import { healthRoutes } from "../routes/health.ts";
import { allowedMethods } from "../security/route_access.ts";
import { admit } from "../security/admission.ts";
import { canonicalPath, rawPathOf } from "../security/target.ts";
import { MERGE_PATCH_JSON } from "../lib/http/body.ts";
import { renderAppError, renderThrown } from "./render_error.ts";
import { registerSharedResponses } from "../lib/http/openapi.ts";
import { corsMiddleware } from "./cors.ts";
import { MatchOnce } from "./match_once.ts";
import { leanOperations } from "./operations.ts";
import { rpcRoutes } from "../rpc/connect/http_routes.ts";
import { requires } from "../security/access.ts";
import { graphqlRoutes } from "../graphql/routes.ts";
import type { GraphqlConfig } from "../lib/config.ts";
import type { GraphqlCaches } from "../graphql/caches.ts";
import type { AccessRules } from "../security/gate.ts";
import { OPENAPI_PATH } from "../lib/paths.ts";

/** What the HTTP app needs from the process. */
interface AppDeps {
  store: Store;
  logger: Logger;
  /** Largest accepted request body in bytes (413 above). */
  maxBodyBytes: number;
  /** True once graceful shutdown began (readiness turns 503). */
  isShuttingDown?: () => boolean;
  /** True once every listener of the process serves (readiness is 503 until then). */
  isListening?: () => boolean;
  /** Whether writes work and the KV file is the one opened (readiness covers writes with it). */
  storage?: StorageHealth | undefined;
  /** GraphQL limits (the `GRAPHQL_*` defaults when omitted). */
  graphql?: GraphqlConfig;
  /** GraphQL's caches, shared with what reports their sizes (a new set when omitted). */
  graphqlCaches?: GraphqlCaches;
  /** The gate's access rules, which GraphQL applies per operation (authentication off if omitted). */
  access?: AccessRules;
  /** How the event stream door paces its streams (`EVENTS_HEARTBEAT`). */
  events?: EventsDoorOptions;
  /** `CORS_ORIGINS`; no CORS headers when undefined. */
  corsOrigins?: "*" | string[] | undefined;
  /** `PUBLIC_URL` without its trailing slash; links in error bodies are relative without it. */
  publicUrl?: string | undefined;
}

/**
 * Builds the HTTP application: REST routes, GraphQL, Connect and gRPC-Web, OpenAPI document,
 * probes, error rendering. It has no middleware but CORS (when configured): the entry
 * (server/entry.ts) does each request's bookkeeping, refusals never reach it
 * (server/refusals.ts), and each REST operation is one handler (server/operations.ts).
 */
export function createApp(deps: AppDeps): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({
    // The entry's match is kept: the app dispatches on the route the gate decided on.
    router: new MatchOnce(),
    // The path the entry made canonical: the router matches the string the gate decided on.
    getPath: (request, options) => (options?.env as AppEnv["Bindings"])?.path ?? pathOf(request),
  });
  leanOperations(app, { maxBodyBytes: deps.maxBodyBytes });

  if (deps.corsOrigins !== undefined) app.use("*", corsMiddleware(deps.corsOrigins));

  booksRoutes(deps.store.books, app);
  // Before the address routes: `/addresses/export` must not be taken for `/addresses/{id}`.
  ownerDataRoutes(deps.store.addresses, app);
  addressEventsRoutes(deps.store.feed, app, deps.events);
  addressRoutes(deps.store.addresses, app);
  healthRoutes({
    store: deps.store,
    isShuttingDown: deps.isShuttingDown ?? (() => false),
    isListening: deps.isListening ?? (() => true),
    storage: deps.storage,
  }, app);
  docsRoutes(app);
  homeRoutes(app);
  // GraphQL and Connect/gRPC-Web mount here (graphql/, rpc/).
  graphqlRoutes(app, {
    books: deps.store.books,
    addresses: deps.store.addresses,
    access: deps.access,
    logger: deps.logger,
    config: deps.graphql,
    results: deps.graphqlCaches?.results,
    documents: deps.graphqlCaches?.documents,
    feed: deps.store.feed,
    heartbeatMs: deps.events?.heartbeatMs,
  });
  rpcRoutes(app, {
    books: deps.store.books,
    addresses: deps.store.addresses,
    feed: deps.store.feed,
    logger: deps.logger,
  });

  registerSharedResponses(app.openAPIRegistry);
  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "When authentication is configured (README, Security): addresses need the " +
      "scopes addresses:read (GET, HEAD) or addresses:write (POST, PUT, PATCH, DELETE); books " +
      "need books:read with AUTH_BOOKS=required. 401 `unauthorized`, 403 `forbidden` and, with " +
      "RATE_LIMIT, 429 `rate-limited` may answer any operation.",
  });
  const documentConfig: Parameters<typeof app.getOpenAPI31Document>[0] = {
    openapi: "3.1.0",
    // Relative: the document describes the server that serves it, wherever that is.
    servers: [{ url: "/", description: "The server that serves this document" }],
    tags: [
      { name: "books", description: "The book catalogue (read-only)." },
      { name: "addresses", description: "The caller's address book." },
      { name: "service", description: "Entry point, probes and documentation." },
    ],
    // A token is optional: whether an operation needs one depends on the configuration.
    security: [{ bearerAuth: [] }, {}],
    info: {
      title: "Books and addresses API",
      version: "1.0.0",
      description: "REST side of the book catalogue and address book. Errors use the detailed " +
        "body `{errors:[{error,message,detail,help}]}`, or RFC 7807 with " +
        "`Accept: application/problem+json`. Versions: `application/json` and " +
        "`application/vnd.books.v1+json` are version 1; `application/vnd.books.v2+json` (in " +
        "Accept, or in Content-Type of a write) is version 2, which changes only PUT on an " +
        "address (RFC 9110 semantics). Entry point: `GET /`.",
    },
  };
  // Built once, on first request, when every route is registered: the document does not change.
  let document: string | undefined;
  app.get(OPENAPI_PATH, requires("public"), () => {
    document ??= JSON.stringify(app.getOpenAPI31Document(documentConfig));
    return new Response(document, { headers: { "content-type": "application/json" } });
  });

  const base = deps.publicUrl ?? "";
  app.notFound((c) => {
    admit(c);
    return routeNotFound(app, c, base);
  });
  app.onError((error, c) => {
    // A route without a declaration (one a test adds) has not set them.
    if (c.get("requestId") === undefined) admit(c);
    return renderThrown(c, error, deps.logger, base);
  });
  return app;
}

/**
 * Without the entry (`app.request()`): the canonical path, or the raw one, which the router
 * matches as it is (no route has a percent-encoding, a fragment or a dot segment).
 */
function pathOf(request: Request): string {
  return canonicalPath(request.url, request.headers.get("host")) ?? rawPathOf(request.url);
}

function routeNotFound(app: OpenAPIHono<AppEnv>, c: Context<AppEnv>, base: string): Response {
  const allow = allowedMethods(app.router, c.req.path);
  if (allow.length === 0) {
    return renderAppError(
      c,
      new AppError("route-not-found", `No route matches ${c.req.path}.`),
      base,
    );
  }
  const allowHeader = allow.join(", ");
  if (c.req.method === "OPTIONS") {
    // RFC 5789 3.1: where PATCH is allowed, OPTIONS names the patch formats.
    const headers: Record<string, string> = allow.includes("PATCH")
      ? { allow: allowHeader, "accept-patch": MERGE_PATCH_JSON }
      : { allow: allowHeader };
    return new Response(null, { status: 204, headers });
  }
  return renderAppError(
    c,
    new AppError(
      "method-not-allowed",
      `${c.req.method} is not allowed on ${c.req.path}; allowed: ${allowHeader}.`,
      { headers: { allow: allowHeader } },
    ),
    base,
  );
}
