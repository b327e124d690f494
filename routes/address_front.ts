import type { Logger } from "../lib/log.ts";
import { logHttpAccess } from "../lib/access_log.ts";
import { requestIdFrom } from "../lib/http/request_id.ts";
import { acceptableJson } from "../lib/http/negotiate.ts";
import { ID_PATTERN } from "../lib/schemas.ts";
import type { Inner } from "../server/handler.ts";
import type { Admission } from "../security/admission.ts";
import { ANONYMOUS } from "../security/caller.ts";
import type { AddressStore } from "../store/addresses/repository.ts";
import { addressAnswer } from "./addresses.ts";

/** The route the front answers, as the access log and tracing name it. */
const ADDRESS_ROUTE = "/addresses/{id}";
const ADDRESS_PATH_PREFIX = ADDRESS_ROUTE.slice(0, ADDRESS_ROUTE.indexOf("{"));

/**
 * Answers `GET /addresses/{id}` of an address the caller holds before the framework sees it, and
 * hands every other request to `app`.
 *
 * Why: a read by id is one KV read; the router, the middleware chain and the parameter and header
 * validation cost about as much again (profile in docs/bench.md). The request has passed the
 * entry's gate already (server/entry.ts: a refused one never reaches a front), whose decision
 * names the caller. The answer is the route's own (`addressAnswer`: the same negotiation, ETag,
 * 304 and headers) with the same access-log line. Anything that is not a plain success goes to
 * `app` (HEAD, an id spelled in a way the route's schema refuses, an unacceptable `Accept`, an
 * address the caller does not hold, a storage failure), so errors are still rendered in one
 * place; such a request reads KV a second time there.
 */
export function withAddressReads(
  deps: { addresses: AddressStore; logger: Logger },
  app: Inner,
): Inner {
  const { addresses, logger } = deps;

  async function answer(request: Request, admission: Admission, id: number, type: string) {
    const started = performance.now();
    const decision = admission.decision;
    const owner = decision?.ok ? decision.caller.owner : ANONYMOUS.owner;
    let stored;
    try {
      stored = await addresses.get(owner, id);
    } catch {
      return await app(request, admission);
    }
    if (stored === undefined) return await app(request, admission);
    const requestId = requestIdFrom(request.headers.get("x-request-id"));
    const response = addressAnswer(stored, {
      type,
      requestId,
      ifNoneMatch: request.headers.get("if-none-match"),
    });
    logHttpAccess(logger, {
      method: "GET",
      path: admission.path,
      route: ADDRESS_ROUTE,
      status: response.status,
      started,
      requestId,
    });
    return response;
  }

  return (request, admission) => {
    const path = admission.path;
    if (request.method !== "GET" || !path.startsWith(ADDRESS_PATH_PREFIX)) {
      return app(request, admission);
    }
    const digits = path.slice(ADDRESS_PATH_PREFIX.length);
    const id = ID_PATTERN.test(digits) ? Number(digits) : NaN;
    const type = acceptableJson(request.headers.get("accept"));
    if (!Number.isSafeInteger(id) || type === undefined) return app(request, admission);
    return answer(request, admission, id, type);
  };
}
