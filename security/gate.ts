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
} from "./verifier.ts";
import type { Access } from "./access.ts";
import { ANONYMOUS, type Caller } from "./caller.ts";
import type { AuthConfig, RateLimitConfig } from "../lib/config.ts";
import { AppError } from "../lib/errors.ts";
import { createRateLimiter, type RateLimiter } from "./rate_limit.ts";
import { createTokenCache, type TokenCache } from "./token_cache.ts";

/** What the gate needs to know of a request. */
export interface GateRequest {
  /**
   * What the route that will answer declares (security/access.ts), found by the listener from the
   * canonical request target: never from a path the gate parses itself.
   */
  access: Access;
  /** The `authorization` field or gRPC metadata, its lines combined (security/authorization.ts). */
  authorization: string | null | undefined;
  /**
   * The client's network address: the rate-limit key when no verified token names a `sub`.
   * A function, as only rate limiting needs it and reading it costs the HTTP edge an op call.
   */
  address: () => string;
}

/** The call may proceed as `caller`; `headers` (RateLimit) go on its response. */
interface Admitted {
  ok: true;
  caller: Caller;
  headers: Record<string, string> | undefined;
  /**
   * For a request that turns out to make `calls` calls in all (GraphQL's mutation fields, each a
   * write as a REST or gRPC call is): charges those beyond the one already charged, all or none.
   * Undefined when the bucket held them (`headers` then say what is left), else the rate limit's
   * refusal. Absent without a rate limit.
   */
  charge?: (calls: number) => AppError | undefined;
}

/** The call is refused; the error carries its headers (WWW-Authenticate, RateLimit, …). */
interface Refused {
  ok: false;
  error: AppError;
}

/** The gate's answer. */
export type Decision = Admitted | Refused;

/** Decides each request; undefined from `createGate` when neither auth nor rate limit is on. */
export interface Gate {
  decide(request: GateRequest): Decision | Promise<Decision>;
  /**
   * A request the listener refused before it could be decided (its target is not canonical, so
   * neither its route nor its token is read): charged to the client's address like any other,
   * and refused with `error`, or with the rate limit's refusal once the address's bucket is
   * empty.
   */
  refuse(address: () => string, error: AppError): Refused;
}

/** The realm every challenge names. */
const REALM = "books";
const CHALLENGE = `Bearer realm="${REALM}"`;
const INVALID_TOKEN = `Bearer realm="${REALM}", error="invalid_token"`;
// RFC 6750's credentials, nothing before or after: whitespace around a field value is not part
// of it over HTTP/1.1 (the server has dropped it), and makes an HTTP/2 request malformed.
const BEARER = /^Bearer +([A-Za-z0-9._~+/=-]{1,8192})$/i;
const MALFORMED = "Send one Authorization field with one token: Authorization: Bearer <token>.";

const PROBE: Admitted = Object.freeze({ ok: true, caller: ANONYMOUS, headers: undefined });

/**
 * The scope a call needs with authentication on: undefined when none, "" for any valid token.
 * Books are public unless `AUTH_BOOKS=required`.
 */
function scopeFor(access: Access, booksRequired: boolean): string | undefined {
  switch (access) {
    case "probe":
    case "public":
      return undefined;
    case "books:read":
      return booksRequired ? access : undefined;
    case "authenticated":
      return "";
    default:
      return access;
  }
}

/** What the configuration says of access: whether tokens are checked, and whether books need one. */
export interface AccessRules {
  /** Authentication is on (a key is configured). */
  authenticate: boolean;
  /** `AUTH_BOOKS=required`. */
  booksRequired: boolean;
}

/** The access rules of an authentication configuration (undefined: authentication is off). */
export function accessRules(auth: AuthConfig | undefined): AccessRules {
  return { authenticate: auth !== undefined, booksRequired: auth?.booksRequired ?? false };
}

/**
 * The gate's rule for one access, given the caller it identified: undefined when the caller may,
 * else the refusal (401 `unauthorized` without a token, 403 `forbidden` without the scope, each
 * with its challenge). The gate applies it to what the answering route declares; a route that
 * answers several kinds of call (GraphQL's root fields) applies it to each kind a request makes.
 */
export function authorize(
  caller: Caller,
  access: Access,
  rules: AccessRules,
): AppError | undefined {
  if (!rules.authenticate) return undefined;
  const scope = scopeFor(access, rules.booksRequired);
  if (scope !== undefined && caller.subject === undefined) {
    return new AppError("unauthorized", "This call needs a bearer token.", {
      headers: { "www-authenticate": CHALLENGE },
    });
  }
  if (scope && !caller.scopes.has(scope)) {
    return new AppError("forbidden", `This call needs the scope ${scope}.`, {
      headers: { "www-authenticate": `Bearer error="insufficient_scope", scope="${scope}"` },
    });
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
  const rules: AccessRules = { authenticate: verifier !== undefined, booksRequired };
  const failures: FailedTokens = createTokenCache<string>();

  /** The bucket of a caller: its token's `sub`, else its network address. */
  function keyOf(limiter: RateLimiter, address: () => string, identity: Identity | undefined) {
    return identity ? `sub:${identity.subject}` : limiter.addressKey(address());
  }

  /**
   * Takes `calls` rate-limit tokens from the bucket of `key`, all or none; a refusal when it
   * holds fewer. `headers`, when given, are updated in place (a decision's, already handed out).
   */
  function take(
    limiter: RateLimiter,
    key: string,
    calls: number,
    headers: Record<string, string> = {},
    inAll = calls,
  ): { headers: Record<string, string>; error?: AppError } {
    const rate = limiter.take(key, calls);
    headers["ratelimit-policy"] = limiter.policy;
    headers["ratelimit"] = `"default";r=${rate.remaining};t=${rate.resetSeconds}`;
    if (rate.allowed) return { headers };
    const detail = inAll > limiter.limit
      ? `This request makes ${inAll} calls; the rate limit allows ${limiter.limit} at most.`
      : inAll > 1
      ? `Over the rate limit (this request makes ${inAll} calls); retry in ${rate.retryAfter} s.`
      : `Over the rate limit; retry in ${rate.retryAfter} s.`;
    const error = new AppError("rate-limited", detail, {
      retryAfter: rate.retryAfter,
      headers: { ...headers },
    });
    return { headers, error };
  }

  /** Takes a rate-limit token for the request; a refusal when the bucket is empty. */
  function charge(
    address: () => string,
    identity: Identity | undefined,
  ): { headers: Record<string, string> | undefined; refused?: Refused } {
    if (limiter === undefined) return { headers: undefined };
    const { headers, error } = take(limiter, keyOf(limiter, address, identity), 1);
    return error === undefined ? { headers } : { headers, refused: { ok: false, error } };
  }

  function finish(
    request: GateRequest,
    identity: Identity | undefined,
    failure: AppError | undefined,
    headers: Record<string, string> | undefined,
  ): Decision {
    if (failure !== undefined) {
      Object.assign(failure.headers, headers);
      return { ok: false, error: failure };
    }
    const caller: Caller = identity === undefined ? ANONYMOUS : {
      owner: identity.subject,
      subject: identity.subject,
      scopes: identity.scopes,
      expiresAt: identity.expiresAt,
    };
    const refusal = authorize(caller, request.access, rules);
    if (refusal !== undefined) {
      Object.assign(refusal.headers, headers);
      return { ok: false, error: refusal };
    }
    if (limiter === undefined || headers === undefined) return { ok: true, caller, headers };
    // The later calls of a request go to the bucket its caller's later requests go to.
    const more = (calls: number) =>
      calls <= 1
        ? undefined
        : take(limiter, keyOf(limiter, request.address, identity), calls - 1, headers, calls).error;
    return { ok: true, caller, headers, charge: more };
  }

  /** Charges the bucket of the identity (or the address), then decides. */
  function settle(
    request: GateRequest,
    identity: Identity | undefined,
    failure: AppError | undefined,
  ): Decision {
    const { headers, refused } = charge(request.address, identity);
    return refused ?? finish(request, identity, failure, headers);
  }

  return {
    decide(request) {
      if (request.access === "probe") return PROBE;
      const authorization = request.authorization;
      // An empty field is a credential that is not one (security/authorization.ts), not none.
      if (verifier === undefined || authorization === undefined || authorization === null) {
        return settle(request, undefined, undefined);
      }
      const token = BEARER.exec(authorization)?.[1];
      if (token === undefined) {
        // One text whatever is wrong: on the gRPC port a line HTTP/2 drops is never seen, so
        // the answer must not depend on what it held (security/authorization.ts).
        return settle(request, undefined, unauthorized(MALFORMED, CHALLENGE));
      }
      const known = verifier.peek(token);
      if (known !== undefined) return settle(request, known, undefined);
      const failed = failures.get(token, Date.now());
      if (failed !== undefined) {
        return settle(request, undefined, unauthorized(failed, INVALID_TOKEN));
      }
      // Cost before trust: a token not seen before is paid for from the client address's bucket
      // before its signature is checked, so a client cannot spend the server's CPU on signatures
      // past its rate limit. Its first request counts there, the later ones under its `sub`.
      const { headers, refused } = charge(request.address, undefined);
      if (refused !== undefined) return refused;
      let verified: Identity | Promise<Identity>;
      try {
        verified = verifier.verify(token);
      } catch (error) {
        return finish(request, undefined, tokenFailure(error, token, failures), headers);
      }
      if (!(verified instanceof Promise)) return finish(request, verified, undefined, headers);
      return verified.then(
        (identity) => finish(request, identity, undefined, headers),
        (error) => finish(request, undefined, tokenFailure(error, token, failures), headers),
      );
    },
    refuse(address, error) {
      const { headers, refused } = charge(address, undefined);
      if (refused !== undefined) return refused;
      if (headers !== undefined) Object.assign(error.headers, headers);
      return { ok: false, error };
    },
  };
}

// Tokens that failed verification are remembered this long, so that a client repeating one
// costs a map lookup, not a signature check; bounded by bytes like the verified ones.
const FAILED_TOKEN_MS = 60_000;
type FailedTokens = TokenCache<string>;

function unauthorized(detail: string, challenge: string): AppError {
  return new AppError("unauthorized", detail, { headers: { "www-authenticate": challenge } });
}

function tokenFailure(error: unknown, token: string, failures: FailedTokens): AppError {
  if (error instanceof TokenError) {
    const bytes = 2 * (token.length + error.message.length) + 64;
    failures.set(token, error.message, Date.now() + FAILED_TOKEN_MS, bytes);
    return unauthorized(error.message, INVALID_TOKEN);
  }
  if (error instanceof KeysUnavailableError) {
    // Not the client's fault: 503 with a retry hint, and nothing is cached.
    return new AppError("service-unavailable", error.message, { retryAfter: 5 });
  }
  throw error;
}
