import assert from "node:assert/strict";
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Store } from "../../store/store.ts";
import type { AppEnv } from "../../lib/http/hono_env.ts";
import type { Handler, Inner } from "../../server/handler.ts";
import { httpEntry } from "../../server/entry.ts";
import { createRefusals } from "../../server/refusals.ts";
import { createLogger, type Logger } from "../../lib/log.ts";
import { stubStore } from "./stores.ts";

/** A store with the catalogue only: for tests of the read paths, which never touch addresses. */
export function catalogueOnly(books: Store["books"]): Store {
  return stubStore(books, () => Promise.reject(new Error("not used by these tests")));
}

/** What a client sees of an answer, minus what legitimately differs between two servers. */
interface Seen {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends one request and returns what came back. Each server sends its own `Date` and, unless the
 * client sent a usable one, its own request id: those are checked for shape and left out.
 */
export async function see(url: string, init: RequestInit): Promise<Seen> {
  const res = await fetch(url, init);
  const headers = Object.fromEntries(res.headers);
  delete headers["date"];
  if (headers["x-request-id"] !== new Headers(init.headers).get("x-request-id")) {
    assert.match(headers["x-request-id"] ?? "", /^[0-9a-f-]{36}$/, url);
    delete headers["x-request-id"];
  }
  return { status: res.status, headers, body: await res.text() };
}

/**
 * The HTTP entry as production composes it (server/entry.ts, without a gate), over `app`
 * (`onApp` is told of each request that reaches it). The access log goes to `logger` (none by
 * default).
 */
export function entryOf(
  app: OpenAPIHono<AppEnv>,
  onApp?: () => void,
  logger: Logger = createLogger({ level: "silent" }),
): Handler {
  const inner: Inner = (request, admission) => {
    onApp?.();
    return app.fetch(request, admission);
  };
  return httpEntry({
    gate: undefined,
    router: app.router,
    logger,
    app: inner,
    refusals: createRefusals({ router: app.router, logger }),
  });
}
