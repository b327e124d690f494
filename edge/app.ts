import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { AppError } from "../lib/errors.ts";
import { invalidInput } from "../lib/invalid_input.ts";
import type { Logger } from "../lib/log.ts";
import type { Store } from "../store/store.ts";
import type { StorageHealth } from "../store/storage_health.ts";
import { addressRoutes } from "../routes/addresses.ts";
import { booksRoutes } from "../routes/books.ts";
import { docsRoutes } from "../routes/docs.ts";
import { homeRoutes } from "../routes/home.ts";
import type { AppEnv } from "../lib/app_env.ts";
import { healthRoutes } from "../routes/health.ts";
import { jsonObjectBody, requestContext } from "./middleware.ts";
import { allowedMethods } from "../lib/allowed_methods.ts";
import { MERGE_PATCH_JSON } from "../lib/body.ts";
import { renderAppError, renderThrown } from "./render_error.ts";
import { corsMiddleware } from "./cors.ts";
import { gateMiddleware } from "./gate.ts";
import { pageHeaders } from "./secure_headers.ts";
import { rpcRoutes } from "../rpc/http_routes.ts";
import { graphqlRoutes } from "../graphql/routes.ts";
import type { GraphqlConfig } from "../lib/config.ts";
import type { ResultCache } from "../graphql/result_cache.ts";

/** What the HTTP app needs from the process. */
export interface AppDeps {
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
  /** GraphQL's result cache, when something in front of the app answers from it too. */
  graphqlResults?: ResultCache;
  /** `CORS_ORIGINS`; no CORS headers when undefined. */
  corsOrigins?: "*" | string[] | undefined;
}

/** Builds the HTTP application: REST routes, OpenAPI document, probes, error rendering. */
export function createApp(deps: AppDeps): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        throw invalidInput(result.target, result.error.issues);
      }
    },
  });

  app.use("*", requestContext(deps.logger));
  if (deps.corsOrigins !== undefined) app.use("*", corsMiddleware(deps.corsOrigins));
  app.use("*", gateMiddleware());
  app.use("*", pageHeaders());
  // "/addresses/*" also matches "/addresses" itself.
  app.use("/addresses/*", jsonObjectBody(deps.maxBodyBytes));

  booksRoutes(deps.store.books, app);
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
    logger: deps.logger,
    config: deps.graphql,
    results: deps.graphqlResults,
  });
  rpcRoutes(app, { books: deps.store.books, logger: deps.logger });

  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "When authentication is configured (README, Security): addresses need the " +
      "scopes addresses:read (GET, HEAD) or addresses:write (POST, PUT, PATCH, DELETE); books " +
      "need books:read with AUTH_BOOKS=required. 401 `unauthorized`, 403 `forbidden` and, with " +
      "RATE_LIMIT, 429 `rate-limited` may answer any operation.",
  });
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
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
  });

  app.notFound((c) => routeNotFound(app, c));
  app.onError((error, c) => renderThrown(c, error, deps.logger));
  return app;
}

function routeNotFound(app: OpenAPIHono<AppEnv>, c: Context<AppEnv>): Response {
  const allow = allowedMethods(app.routes, c.req.path);
  if (allow.length === 0) {
    return renderAppError(c, new AppError("route-not-found", `No route matches ${c.req.path}.`));
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
  );
}
