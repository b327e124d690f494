/**
 * Cost of the gate per request, without the network: `deno bench bench/gate_bench.ts`.
 * Not part of `deno task bench` (which measures whole servers); see docs/bench.md, "The gate's cost".
 */
import { jwtVerify } from "jose";
import { createVerifier } from "../security/verifier.ts";
import { createGate, type GateRequest } from "../security/gate.ts";
import { createRateLimiter } from "../security/rate_limit.ts";
import { hsToken, SECRET, testKey } from "../tests/support/tokens.ts";

const auth = {
  secret: SECRET,
  jwksFile: undefined,
  jwksUrl: undefined,
  issuer: undefined,
  audience: undefined,
  booksRequired: true,
};
const claims = { sub: "alice", scope: "books:read addresses:read" };
const hs = await hsToken(claims);
const keys = await Promise.all(["RS256", "ES256", "EdDSA"].map((alg) => testKey(alg, alg)));
const signed = await Promise.all(keys.map((k) => k.sign(claims)));
const jwksFile = await Deno.makeTempFile({ suffix: ".json" });
await Deno.writeTextFile(jwksFile, JSON.stringify({ keys: keys.map((k) => k.publicJwk) }));

const verifier = await createVerifier({ ...auth, jwksFile });
const limiter = createRateLimiter({ limit: 1_000_000_000, windowSeconds: 1 });
const gate = createGate({ booksRequired: true, verifier, limiter })!;
const authOnly = createGate({ booksRequired: true, verifier, limiter: undefined })!;
const limitOnly = createGate({ booksRequired: false, verifier: undefined, limiter })!;
const request = (token?: string): GateRequest => ({
  access: "books:read",
  authorization: token && `Bearer ${token}`,
  address: () => "127.0.0.1",
});
await gate.decide(request(hs)); // cached from here on

Deno.bench("auth off, rate limit off: no gate (the paths skip it)", { group: "gate" }, () => {});
Deno.bench("rate limit only, no token", { group: "gate" }, () => {
  limitOnly.decide(request());
});
Deno.bench("auth + rate limit, cached HS256 token", { group: "gate", baseline: true }, async () => {
  await gate.decide(request(hs));
});
Deno.bench("auth only, cached HS256 token", { group: "gate" }, async () => {
  await authOnly.decide(request(hs));
});

const secret = new TextEncoder().encode(SECRET);
Deno.bench("verify HS256, uncached (jose jwtVerify)", { group: "verify" }, async () => {
  await jwtVerify(hs, secret, { algorithms: ["HS256"] });
});
for (const [i, key] of keys.entries()) {
  const publicKey = await crypto.subtle.importKey(
    "jwk",
    key.publicJwk,
    key.alg === "RS256"
      ? { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }
      : key.alg === "ES256"
      ? { name: "ECDSA", namedCurve: "P-256" }
      : { name: "Ed25519" },
    false,
    ["verify"],
  );
  Deno.bench(`verify ${key.alg}, uncached (jose jwtVerify)`, { group: "verify" }, async () => {
    await jwtVerify(signed[i]!, publicKey, { algorithms: [key.alg] });
  });
}
