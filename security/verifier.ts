import {
  createLocalJWKSet,
  createRemoteJWKSet,
  type JSONWebKeySet,
  type JWTPayload,
  jwtVerify,
  type JWTVerifyGetKey,
} from "jose";
import type { AuthConfig } from "../lib/config.ts";
import { ConfigError } from "../lib/config_error.ts";
import { stringBytes } from "../lib/cache_bytes.ts";
import { createTokenCache, type TokenCache } from "./token_cache.ts";

/** Algorithms a JWKS may use; HS256 only ever with `AUTH_JWT_SECRET`. */
const PUBLIC_KEY_ALGORITHMS = ["RS256", "ES256", "EdDSA"];
const CLOCK_TOLERANCE_SECONDS = 60;
// Verified tokens are remembered this long at most (never past their `exp`), so a repeated
// token costs a map lookup instead of a signature check; the cache is bounded by bytes.
const CACHE_MS = 60_000;
// What a cached identity holds besides its strings: the entry, the identity, its scope Set
// (and each scope's slot in it).
const CACHE_ENTRY_BYTES = 256;
const CACHE_SCOPE_BYTES = 32;

/** What a verified token says about its bearer. */
export interface Identity {
  subject: string;
  scopes: ReadonlySet<string>;
  /** The token's `exp` in ms since the epoch: a stream it admitted ends then. */
  expiresAt?: number;
}

/** Why a token was refused; `detail` is safe to show (it never contains the token). */
export class TokenError extends Error {
  override name = "TokenError";
}

/** The JWKS URL could not be fetched: the token may be fine, the server cannot tell now. */
export class KeysUnavailableError extends Error {
  override name = "KeysUnavailableError";
}

/** Verifies bearer tokens against the configured keys. */
export interface Verifier {
  /** The identity in `token`, or a TokenError. Repeated tokens are answered from a cache. */
  verify(token: string): Identity | Promise<Identity>;
  /** The identity of a token verified before and still cached, without checking anything. */
  peek(token: string): Identity | undefined;
}

/** Options for tests: how the JWKS URL is refetched. */
export interface VerifierOptions {
  /** Minimum time between two JWKS fetches for an unknown key id (jose's default 30 s). */
  jwksCooldownMs?: number;
  /** Age after which the fetched set is fetched again (jose's default 10 min). */
  jwksMaxAgeMs?: number;
  /** Where verified tokens are remembered (a new cache with the default bounds when omitted). */
  tokenCache?: TokenCache<Identity>;
}

/**
 * Builds the verifier: HS256 with the secret, the JWKS file's and the JWKS URL's public keys.
 * The algorithms accepted follow from the keys configured, so `alg: none` is never accepted
 * and an HS256 token is refused unless a secret is configured. A JWKS file that cannot be read
 * stops start-up with a ConfigError naming `AUTH_JWKS_FILE`.
 */
export async function createVerifier(
  config: AuthConfig,
  options: VerifierOptions = {},
): Promise<Verifier> {
  const secret = config.secret === undefined ? undefined : new TextEncoder().encode(config.secret);
  const file = config.jwksFile === undefined ? undefined : await readJwks(config.jwksFile);
  // Rotation: a token naming a key id the cached set lacks makes jose fetch the set again (at
  // most once per cooldown); a key removed from the set stays accepted until the set is older
  // than its maximum age.
  const remote = config.jwksUrl === undefined ? undefined : createRemoteJWKSet(
    new URL(config.jwksUrl),
    {
      ...(options.jwksCooldownMs === undefined ? {} : { cooldownDuration: options.jwksCooldownMs }),
      ...(options.jwksMaxAgeMs === undefined ? {} : { cacheMaxAge: options.jwksMaxAgeMs }),
    },
  );
  const algorithms = [
    ...(secret ? ["HS256"] : []),
    ...(file || remote ? PUBLIC_KEY_ALGORITHMS : []),
  ];
  const getKey: JWTVerifyGetKey = async (header, token) => {
    if (header.alg === "HS256") {
      if (secret) return secret;
    } else if (file) {
      // A key the file lacks may be in the remote set.
      try {
        return await file(header, token);
      } catch (error) {
        if (!remote) throw error;
      }
    }
    if (remote) return await remote(header, token);
    throw new TokenError(`Tokens signed with ${header.alg} are not accepted.`);
  };
  const verifyOptions = {
    algorithms,
    clockTolerance: CLOCK_TOLERANCE_SECONDS,
    requiredClaims: ["sub", "exp"],
    ...(config.issuer === undefined ? {} : { issuer: config.issuer }),
    ...(config.audience === undefined ? {} : { audience: config.audience }),
  };

  const cache = options.tokenCache ?? createTokenCache<Identity>();

  async function verifyNow(token: string): Promise<Identity> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, getKey, verifyOptions));
    } catch (error) {
      if (remote && isFetchFailure(error)) {
        throw new KeysUnavailableError("The keys to check the token cannot be fetched now.");
      }
      throw new TokenError(reasonOf(error));
    }
    const identity = identityOf(payload);
    const until = Math.min(
      Date.now() + CACHE_MS,
      (payload.exp! + CLOCK_TOLERANCE_SECONDS) * 1000,
    );
    cache.set(token, identity, until, identityBytes(token, identity));
    return identity;
  }

  return {
    verify: (token) => cache.get(token, Date.now()) ?? verifyNow(token),
    peek: (token) => cache.get(token, Date.now()),
  };
}

/** What remembering `identity` under `token` holds, in bytes. */
function identityBytes(token: string, identity: Identity): number {
  let bytes = CACHE_ENTRY_BYTES + stringBytes(token) + stringBytes(identity.subject);
  for (const scope of identity.scopes) bytes += CACHE_SCOPE_BYTES + stringBytes(scope);
  return bytes;
}

async function readJwks(path: string) {
  let jwks: JSONWebKeySet;
  try {
    jwks = JSON.parse(await Deno.readTextFile(path));
  } catch (error) {
    throw new ConfigError(`invalid AUTH_JWKS_FILE=${path}: ${(error as Error).message}`);
  }
  if (!Array.isArray(jwks?.keys) || jwks.keys.length === 0) {
    throw new ConfigError(`invalid AUTH_JWKS_FILE=${path}: not a JWKS with at least one key`);
  }
  if (jwks.keys.some((key) => key.kty === "oct" || "d" in key)) {
    throw new ConfigError(
      `invalid AUTH_JWKS_FILE=${path}: must hold public keys only (no secret or private keys)`,
    );
  }
  return createLocalJWKSet(jwks);
}

function identityOf(payload: JWTPayload): Identity {
  if (typeof payload.sub !== "string" || payload.sub === "") {
    throw new TokenError("The token's sub claim must be a non-empty string.");
  }
  // The sub is a KV key part (the owner), and KV encodes key strings as UTF-8, which replaces a
  // lone surrogate with U+FFFD: "\ud800" would share the keys of "\ufffd".
  if (!payload.sub.isWellFormed()) {
    throw new TokenError("The token's sub claim must be well-formed Unicode.");
  }
  const scopes = new Set<string>();
  const { scope, scp } = payload as { scope?: unknown; scp?: unknown };
  if (typeof scope === "string") { for (const s of scope.split(" ")) if (s) scopes.add(s); }
  if (Array.isArray(scp)) { for (const s of scp) if (typeof s === "string") scopes.add(s); }
  return { subject: payload.sub, scopes, expiresAt: payload.exp! * 1000 };
}

/** A failure to fetch the JWKS URL (network, timeout, not 200, not a key set). */
function isFetchFailure(error: unknown): boolean {
  if (error instanceof TypeError) return true; // fetch: connection refused, DNS, …
  const code = (error as { code?: string }).code;
  return code === "ERR_JWKS_TIMEOUT" || code === "ERR_JOSE_GENERIC" || code === "ERR_JWKS_INVALID";
}

/** A reason for the client from jose's error code; jose's messages are not passed on as is. */
function reasonOf(error: unknown): string {
  if (error instanceof TokenError) return error.message;
  const { code, claim } = error as { code?: string; claim?: string };
  switch (code) {
    case "ERR_JWT_EXPIRED":
      return "The token has expired.";
    case "ERR_JWT_CLAIM_VALIDATION_FAILED":
      return claim === "nbf"
        ? "The token is not valid yet."
        : `The token's ${claim ?? "claims"} claim is missing or not accepted.`;
    case "ERR_JOSE_ALG_NOT_ALLOWED":
      return "The token's signing algorithm is not accepted.";
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
      return "The token's signature does not verify.";
    case "ERR_JWKS_NO_MATCHING_KEY":
    case "ERR_JWKS_MULTIPLE_MATCHING_KEYS":
      return "No configured key matches the token.";
    default:
      return "The token is malformed.";
  }
}
