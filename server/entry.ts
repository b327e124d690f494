import type { Router } from "hono/router";
import type { Gate } from "../security/gate.ts";
import { canonicalPath, notCanonical, rawPathOf } from "../security/target.ts";
import type { Admission } from "../security/admission.ts";
import { ANONYMOUS } from "../security/caller.ts";
import type { Handler, Inner } from "./handler.ts";
import { accessFor } from "../security/route_access.ts";
import { addMissingHeaders, isCompleteAnswer } from "../lib/http/response_headers.ts";
import { requestIdFrom } from "../lib/http/request_id.ts";
import { logHttpAccess } from "../lib/access_log.ts";
import type { Logger } from "../lib/log.ts";
import { routeTemplate, TRACING } from "../lib/tracing.ts";
import { addPageHeaders } from "./secure_headers.ts";

/** What the entry needs: the gate, the app's router, where refusals and admitted requests go. */
interface EntryDeps {
  /** Authentication and rate limits; undefined when neither is configured. */
  gate: Gate | undefined;
  /** The app's own router: the entry asks it which route will answer. */
  router: Router<unknown>;
  logger: Logger;
  /** The app (server/app.ts). */
  app: Inner;
  /** Answers refused requests (server/refusals.ts): no route runs for them. */
  refusals: Inner;
}

/**
 * The HTTP listener's entry, where every request is decided once and its bookkeeping done once.
 * Its target is made canonical (else 400); the gate (when configured) decides from what the route
 * that will answer declares, found by asking the app's own router with that same canonical path
 * (server/match_once.ts keeps the match, so the app dispatches on the very same one). A refused
 * request goes to the refusals, where no route runs; an admitted one to the app.
 *
 * Then, once for every answer of the app and the refusals: the page headers of an HTML answer,
 * the gate's RateLimit headers, `X-Request-Id` and `nosniff`, each only when the answer does not
 * carry it yet (answers built with them stay untouched, and Deno.serve keeps its fast path for
 * them), and one access-log line. The routes themselves carry no middleware for any of this.
 */
export function httpEntry(deps: EntryDeps): Handler {
  const { gate, router, logger, refusals } = deps;
  const app = finishing(deps.app);
  const refused = finishing(refusals);

  /**
   * Does an answer's bookkeeping: headers, then the access-log line. The route template is read
   * only when tracing names spans after it (the router keeps the match: no second lookup).
   */
  function finishing(inner: Inner): Inner {
    return (request, admission) => {
      const started = performance.now();
      const done = (response: Response): Response => {
        const decision = admission.decision;
        const gated = decision?.ok ? decision.headers : undefined;
        // An answer built complete is left unread (lib/http/response_headers.ts).
        if (gated !== undefined || !isCompleteAnswer(response)) {
          const headers = response.headers;
          addPageHeaders(headers);
          if (gated !== undefined) addMissingHeaders(headers, gated);
          if (!headers.has("x-request-id")) headers.set("x-request-id", admission.requestId);
          if (!headers.has("x-content-type-options")) {
            headers.set("x-content-type-options", "nosniff");
          }
        }
        logHttpAccess(logger, {
          method: request.method,
          path: admission.path,
          route: TRACING && decision?.ok !== false
            ? routeOf(request.method, admission.path)
            : undefined,
          status: response.status,
          started,
          requestId: admission.requestId,
        });
        return response;
      };
      const response = inner(request, admission);
      return response instanceof Promise ? response.then(done) : done(response);
    };
  }

  function routeOf(method: string, path: string): string | undefined {
    const route = accessFor(router, method, path).route;
    return route === undefined ? undefined : routeTemplate(route);
  }

  function proceed(request: Request, admission: Admission): Response | Promise<Response> {
    return admission.decision?.ok === false ? refused(request, admission) : app(request, admission);
  }

  // Synchronous whenever the gate is (no token, or a token verified before), so that Deno.serve
  // keeps its fast path for a handler that returns a Response.
  return (request, info) => {
    const requestId = requestIdFrom(request.headers.get("x-request-id"));
    const path = canonicalPath(request.url, request.headers.get("host"));
    if (path === undefined) {
      const raw = rawPathOf(request.url);
      // Charged to the address like any request (its token is not read): a client past its
      // rate limit gets 429 whatever it spells.
      const refusal = notCanonical(raw);
      const decision = gate === undefined
        ? { ok: false as const, error: refusal }
        : gate.refuse(addressOf(info), refusal);
      return proceed(request, { info, path: raw, requestId, caller: ANONYMOUS, decision });
    }
    if (gate === undefined) {
      return proceed(request, { info, path, requestId, caller: ANONYMOUS, decision: undefined });
    }
    const decision = gate.decide({
      access: accessFor(router, request.method, path).access,
      authorization: request.headers.get("authorization"),
      address: addressOf(info),
    });
    return decision instanceof Promise
      ? decision.then((d) => proceed(request, admissionOf(info, path, requestId, d)))
      : proceed(request, admissionOf(info, path, requestId, decision));
  };
}

function admissionOf(
  info: Deno.ServeHandlerInfo,
  path: string,
  requestId: string,
  decision: Admission["decision"],
): Admission {
  const caller = decision?.ok ? decision.caller : ANONYMOUS;
  return { info, path, requestId, caller, decision };
}

/** The client's address, read only if the gate needs it (reading it costs an op call). */
function addressOf(info: Deno.ServeHandlerInfo): () => string {
  return () => (info.remoteAddr as Deno.NetAddr).hostname ?? "";
}
