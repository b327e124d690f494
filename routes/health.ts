import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { AppError } from "../lib/errors.ts";
import { UNAVAILABLE } from "../lib/http/openapi.ts";
import type { Store } from "../store/store.ts";
import type { StorageHealth } from "../store/kv/storage_health.ts";
import type { AppEnv } from "../lib/http/hono_env.ts";
import { routeAccess } from "../security/access.ts";
import { LIVENESS_PATH, READINESS_PATH } from "../lib/paths.ts";

const StatusSchema = z.object({ status: z.string() }).openapi("Status");

const healthz = createRoute({
  ...routeAccess("probe"),
  method: "get",
  path: LIVENESS_PATH,
  operationId: "getLiveness",
  tags: ["service"],
  summary: "Liveness: 200 while the process serves",
  description: "Answers while the process serves, whatever the load or the credentials (no " +
    "token, no rate limit). Under `deno serve`, a server whose start-up failed answers 503.",
  responses: {
    200: { description: "Alive", content: { "application/json": { schema: StatusSchema } } },
    503: UNAVAILABLE,
  },
});

const readyz = createRoute({
  ...routeAccess("probe"),
  method: "get",
  path: READINESS_PATH,
  operationId: "getReadiness",
  tags: ["service"],
  summary: "Readiness: every listener serves, KV reachable, catalogue seeded, not shutting down",
  description: "200 once every listener of the process serves, KV answers, writes work and the " +
    "catalogue is seeded; 503 `service-unavailable` or `storage-unavailable` otherwise (writes " +
    "failing, the KV file not the one opened), and while shutting down. Writes are covered by a " +
    "probe write when no write succeeded in the last second. No token, no rate limit.",
  responses: {
    200: { description: "Ready", content: { "application/json": { schema: StatusSchema } } },
    503: UNAVAILABLE,
  },
});

const READY_TIMEOUT_MS = 2000;

/** Liveness and readiness probes. */
export function healthRoutes(
  deps: {
    store: Store;
    isShuttingDown: () => boolean;
    isListening: () => boolean;
    storage?: StorageHealth | undefined;
  },
  app: OpenAPIHono<AppEnv>,
): void {
  app.openapi(healthz, (c) => c.json({ status: "ok" }, 200));

  app.openapi(readyz, async (c) => {
    if (deps.isShuttingDown()) {
      throw new AppError("service-unavailable", "The server is shutting down.", { retryAfter: 1 });
    }
    if (!deps.isListening()) {
      throw new AppError("service-unavailable", "Not every listener is serving yet.", {
        retryAfter: 1,
      });
    }
    if (!deps.store.books.isReady()) {
      throw new AppError("service-unavailable", "The catalogue is not loaded yet.", {
        retryAfter: 1,
      });
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    let refusal: AppError | undefined;
    try {
      refusal = await Promise.race([
        (async () => {
          await deps.store.ping();
          return await deps.storage?.readiness();
        })(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error("KV ping timed out")), READY_TIMEOUT_MS);
        }),
      ]);
    } catch (error) {
      // A storage fault on the read is the guard's error already.
      if (error instanceof AppError) throw error;
      throw new AppError("service-unavailable", "KV is not reachable.", {
        retryAfter: 1,
        cause: error,
      });
    } finally {
      clearTimeout(timer);
    }
    if (refusal !== undefined) throw refusal;
    return c.json({ status: "ready" }, 200);
  });
}
