/**
 * The one gate: decides who the caller is and whether the call may proceed (authentication,
 * scope, rate limit), for every protocol on both listeners. The HTTP edge and the gRPC listener
 * each ask it once per request, before anything answers.
 */
import {
  createVerifier,
  type Identity,
  KeysUnavailableError,
  TokenError,
  type Verifier,
  type VerifierOptions,
} from "./auth.ts";
import { ANONYMOUS, type Caller } from "./caller.ts";
import type { AuthConfig, RateLimitConfig } from "./config.ts";
import { AppError } from "./errors.ts";
import { createRateLimiter, type RateLimiter } from "./rate_limit.ts";

/** What the gate needs to know of a request. */
export interface GateRequest {
  method: string;
  /** URL path without query (`/addresses/7`, `/books.v1.BooksService/books`). */
  path: string;
  /** The `authorization` header or gRPC metadata. */
  authorization: string | null | undefined;
  /**
   * The client's network address: the rate-limit key when no verified token names a `sub`.
   * A function, as only rate limiting needs it and reading it costs the HTTP edge an op call.
   */
  address: () => string;
}

/** The call may proceed as `caller`; `headers` (RateLimit) go on its response. */
export interface Admitted {
  ok: true;
  caller: Caller;
  headers: Record<string, string> | undefined;
}

/** The call is refused; the error carries its headers (WWW-Authenticate, RateLimit, …). */
export interface Refused {
  ok: false;
  error: AppError;
}

/** The gate's answer. */
export type Decision = Admitted | Refused;

/** Decides each request; undefined from `createGate` when neither auth nor rate limit is on. */
export interface Gate {
  decide(request: GateRequest): Decision | Promise<Decision>;
}

/** The realm every challenge names. */
export const REALM = "books";
const CHALLENGE = `Bearer realm="${REALM}"`;
const INVALID_TOKEN = `Bearer realm="${REALM}", error="invalid_token"`;
const BEARER = /^Bearer +([A-Za-z0-9._~+/=-]{1,8192})\s*$/i;

/** Paths no gate applies to: probes must answer whatever the load or the credentials. */
const EXEMPT = new Set(["/healthz", "/readyz", "/grpc.health.v1.Health/Check"]);

/**
 * The scope a request needs: undefined for public resources. Addresses always need one when
 * authentication is on; books only with `AUTH_BOOKS=required`.
 */
export function requiredScope(
  method: string,
  path: string,
  booksRequired: boolean,
): string | undefined {
  if (path === "/addresses" || path.startsWith("/addresses/")) {
    if (method === "OPTIONS") return undefined; // says only which methods exist
    return method === "GET" || method === "HEAD" ? "addresses:read" : "addresses:write";
  }
  if (!booksRequired) return undefined;
  if (
    path === "/rest/books" || path.startsWith("/api/book/") ||
    path.startsWith("/books.v1.BooksService/") ||
    // GET /graphql is the GraphiQL page (or a refusal); every operation is a POST.
    (path === "/graphql" && method !== "GET" && method !== "HEAD" && method !== "OPTIONS")
  ) {
    return "books:read";
  }
  return undefined;
}

/**
 * Opens the gate the configuration asks for: undefined when neither authentication nor rate
 * limiting is on, so that every path can skip it with one check at start-up.
 */
export async function openGate(
  config: { auth: AuthConfig | undefined; rateLimit: RateLimitConfig | undefined },
  options: VerifierOptions = {},
): Promise<Gate | undefined> {
  return createGate({
    booksRequired: config.auth?.booksRequired ?? false,
    verifier: config.auth && await createVerifier(config.auth, options),
    limiter: config.rateLimit && createRateLimiter(config.rateLimit),
  });
}

/** Builds the gate from its parts; undefined when there is nothing to check. */
export function createGate(parts: {
  booksRequired: boolean;
  verifier: Verifier | undefined;
  limiter: RateLimiter | undefined;
}): Gate | undefined {
  const { verifier, limiter, booksRequired } = parts;
  if (verifier === undefined && limiter === undefined) return undefined;

  function finish(
    request: GateRequest,
    identity: Identity | undefined,
    failure: AppError | undefined,
  ): Decision {
    let headers: Record<string, string> | undefined;
    if (limiter !== undefined) {
      const key = identity ? `sub:${identity.subject}` : limiter.addressKey(request.address());
      const rate = limiter.take(key);
      headers = {
        "ratelimit-policy": limiter.policy,
        "ratelimit": `"default";r=${rate.remaining};t=${rate.resetSeconds}`,
      };
      if (!rate.allowed) {
        return {
          ok: false,
          error: new AppError(
            "rate-limited",
            `Over the rate limit; retry in ${rate.retryAfter} s.`,
            { retryAfter: rate.retryAfter, headers },
          ),
        };
      }
    }
    if (failure !== undefined) {
      Object.assign(failure.headers, headers);
      return { ok: false, error: failure };
    }
    const caller: Caller = identity === undefined
      ? ANONYMOUS
      : { owner: identity.subject, subject: identity.subject, scopes: identity.scopes };
    if (verifier !== undefined) {
      const scope = requiredScope(request.method, request.path, booksRequired);
      if (scope !== undefined && identity === undefined) {
        return refuse("unauthorized", "This call needs a bearer token.", CHALLENGE, headers);
      }
      if (scope !== undefined && !caller.scopes.has(scope)) {
        return refuse(
          "forbidden",
          `This call needs the scope ${scope}.`,
          `Bearer error="insufficient_scope", scope="${scope}"`,
          headers,
        );
      }
    }
    return { ok: true, caller, headers };
  }

  return {
    decide(request) {
      if (EXEMPT.has(request.path)) return { ok: true, caller: ANONYMOUS, headers: undefined };
      const authorization = request.authorization;
      if (verifier === undefined || !authorization) return finish(request, undefined, undefined);
      const token = BEARER.exec(authorization)?.[1];
      if (token === undefined) {
        const error = unauthorized("Send the token as Authorization: Bearer <token>.", CHALLENGE);
        return finish(request, undefined, error);
      }
      let verified: Identity | Promise<Identity>;
      try {
        verified = verifier.verify(token);
      } catch (error) {
        return finish(request, undefined, tokenFailure(error));
      }
      if (!(verified instanceof Promise)) return finish(request, verified, undefined);
      return verified.then(
        (identity) => finish(request, identity, undefined),
        (error) => finish(request, undefined, tokenFailure(error)),
      );
    },
  };
}

function unauthorized(detail: string, challenge: string): AppError {
  return new AppError("unauthorized", detail, { headers: { "www-authenticate": challenge } });
}

function refuse(
  code: "unauthorized" | "forbidden",
  detail: string,
  challenge: string,
  headers: Record<string, string> | undefined,
): Refused {
  return {
    ok: false,
    error: new AppError(code, detail, { headers: { ...headers, "www-authenticate": challenge } }),
  };
}

function tokenFailure(error: unknown): AppError {
  if (error instanceof TokenError) return unauthorized(error.message, INVALID_TOKEN);
  if (error instanceof KeysUnavailableError) {
    // Not the client's fault: 503 with a retry hint, and nothing is cached.
    return new AppError("service-unavailable", error.message, { retryAfter: 5 });
  }
  throw error;
}
