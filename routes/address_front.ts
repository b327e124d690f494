import type { Logger } from "../lib/log.ts";
import { logHttpAccess } from "../lib/access_log.ts";
import { requestIdFrom } from "../lib/http/request_id.ts";
import { acceptableJson } from "../lib/http/negotiate.ts";
import { ID_PATTERN, isPageSize } from "../lib/schemas.ts";
import { ADDRESS_ROUTE, ADDRESSES_PATH } from "../lib/paths.ts";
import type { Inner } from "../server/handler.ts";
import type { Admission } from "../security/admission.ts";
import { ANONYMOUS } from "../security/caller.ts";
import type { AddressStore } from "../store/addresses/repository.ts";
import { addressAnswer } from "./addresses.ts";
import { pageAnswer } from "./address_page.ts";

// The routes the front answers, as the access log and tracing name them.
const ADDRESS_PATH_PREFIX = ADDRESS_ROUTE.slice(0, ADDRESS_ROUTE.indexOf("{"));

// The query of a page as clients send it: `limit` and `cursor`, each at most once, in plain
// characters (no percent-encoding, no `+`); anything else is parsed by the route.
const PAGE_QUERY = /^(?:limit=([0-9]{1,4})|cursor=([A-Za-z0-9_-]{1,200}))$/;

/**
 * The page a query asks for, when the query is one the front may parse: at most one `limit` (the
 * route's rule, `isPageSize`) and one `cursor` of plain characters; else undefined (the route parses it).
 */
function pageQuery(url: string): { limit?: number; cursor?: string } | undefined {
  const at = url.indexOf("?");
  if (at === -1 || at === url.length - 1) return {};
  const parts = url.slice(at + 1).split("&");
  if (parts.length > 2) return undefined;
  const query: { limit?: number; cursor?: string } = {};
  for (const part of parts) {
    const match = PAGE_QUERY.exec(part);
    if (match === null) return undefined;
    if (match[1] !== undefined) {
      const limit = Number(match[1]);
      if (query.limit !== undefined || !isPageSize(limit)) return undefined;
      query.limit = limit;
    } else {
      if (query.cursor !== undefined) return undefined;
      query.cursor = match[2];
    }
  }
  return query;
}

/**
 * Answers the address book's reads, `GET /addresses` (a page) and `GET /addresses/{id}` of an
 * address the caller holds, before the framework sees them, and hands every other request to
 * `app`.
 *
 * Why: a read by id is one KV read, a page of 50 one range read; the router, the middleware chain
 * and the parameter, query and header validation cost about as much again (profile in
 * docs/bench.md). The request has passed the entry's gate already (server/entry.ts: a refused one
 * never reaches a front), whose decision names the caller. The answers are the routes' own
 * (`addressAnswer`, `pageAnswer`: the same negotiation, ETag, 304, body and headers) with the
 * same access-log line. Anything that is not a plain success goes to `app` (HEAD, an id or query
 * spelled in a way the front does not parse, an unacceptable `Accept`, an address the caller does
 * not hold, a cursor this server did not issue, a storage failure), so errors are still rendered
 * in one place; such a request reads KV a second time there.
 */
export function withAddressReads(
  deps: { addresses: AddressStore; logger: Logger },
  app: Inner,
): Inner {
  const { addresses, logger } = deps;

  /** Answers with `read`'s response, or hands the request to `app` when it has none or fails. */
  async function answer(
    request: Request,
    admission: Admission,
    route: string,
    read: (owner: string, requestId: string) => Promise<Response | undefined>,
  ): Promise<Response> {
    const started = performance.now();
    const decision = admission.decision;
    const owner = decision?.ok ? decision.caller.owner : ANONYMOUS.owner;
    const requestId = requestIdFrom(request.headers.get("x-request-id"));
    let response;
    try {
      response = await read(owner, requestId);
    } catch {
      return await app(request, admission);
    }
    if (response === undefined) return await app(request, admission);
    logHttpAccess(logger, {
      method: "GET",
      path: admission.path,
      route,
      status: response.status,
      started,
      requestId,
    });
    return response;
  }

  return (request, admission) => {
    const path = admission.path;
    if (request.method !== "GET") return app(request, admission);
    if (path === ADDRESSES_PATH) {
      const query = pageQuery(request.url);
      const type = acceptableJson(request.headers.get("accept"));
      if (query === undefined || type === undefined) return app(request, admission);
      return answer(
        request,
        admission,
        ADDRESSES_PATH,
        (owner, requestId) => pageAnswer(addresses, owner, query, { type, requestId }),
      );
    }
    if (!path.startsWith(ADDRESS_PATH_PREFIX)) return app(request, admission);
    const digits = path.slice(ADDRESS_PATH_PREFIX.length);
    const id = ID_PATTERN.test(digits) ? Number(digits) : NaN;
    const type = acceptableJson(request.headers.get("accept"));
    if (!Number.isSafeInteger(id) || type === undefined) return app(request, admission);
    return answer(request, admission, ADDRESS_ROUTE, async (owner, requestId) => {
      const stored = await addresses.get(owner, id);
      return stored && addressAnswer(stored, {
        type,
        requestId,
        ifNoneMatch: request.headers.get("if-none-match"),
      });
    });
  };
}
