/**
 * Cost before trust (design.md): the gate takes the rate limit before it spends a signature
 * check on a token it has not seen, and remembers tokens that failed. The gate is built from its
 * parts with a verifier that counts its signature checks; the statuses are also checked over a
 * socket against the real server.
 */
import assert from "node:assert/strict";
import { type Identity, TokenError, type Verifier } from "../security/verifier.ts";
import { createGate, type GateRequest } from "../security/gate.ts";
import { createRateLimiter } from "../security/rate_limit.ts";
import { bearer } from "./support/requests.ts";
import { startTestServer } from "./support/server.ts";
import { hsToken, SECRET } from "./support/tokens.ts";

function countingVerifier(): Verifier & { checks: number } {
  const verified = new Map<string, Identity>();
  const verifier = {
    checks: 0,
    peek: (token: string) => verified.get(token),
    verify(token: string): Promise<Identity> {
      verifier.checks++;
      if (!token.startsWith("good")) return Promise.reject(new TokenError("bad signature"));
      const identity = { subject: token, scopes: new Set(["addresses:read"]) };
      verified.set(token, identity);
      return Promise.resolve(identity);
    },
  };
  return verifier;
}

const request = (token: string, address = "192.0.2.1"): GateRequest => ({
  access: "addresses:read",
  authorization: `Bearer ${token}`,
  address: () => address,
});

Deno.test("a client past its rate limit cannot make the gate check signatures", async () => {
  const verifier = countingVerifier();
  const limiter = createRateLimiter({ limit: 2, windowSeconds: 3600 });
  const gate = createGate({ booksRequired: false, verifier, limiter })!;
  const statuses: number[] = [];
  for (let i = 0; i < 50; i++) {
    const decision = await gate.decide(request(`bad-${i}`));
    statuses.push(decision.ok ? 200 : decision.error.status);
  }
  assert.deepEqual(statuses.slice(0, 2), [401, 401]);
  assert.deepEqual(new Set(statuses.slice(2)), new Set([429]));
  assert.equal(verifier.checks, 2);
  // Another address has its own bucket.
  const other = await gate.decide(request("bad-other", "198.51.100.7"));
  assert.equal(other.ok ? 200 : other.error.status, 401);
});

Deno.test("a token that failed is remembered: repeating it costs no signature check", async () => {
  const verifier = countingVerifier();
  const gate = createGate({ booksRequired: false, verifier, limiter: undefined })!;
  for (let i = 0; i < 50; i++) {
    const decision = await gate.decide(request("bad-repeated"));
    assert.equal(decision.ok, false);
    if (!decision.ok) {
      assert.equal(decision.error.status, 401);
      assert.match(decision.error.headers["www-authenticate"] ?? "", /invalid_token/);
    }
  }
  assert.equal(verifier.checks, 1);
});

Deno.test("a verified token is charged to its sub, a new one to the address first", async () => {
  const verifier = countingVerifier();
  const limiter = createRateLimiter({ limit: 2, windowSeconds: 3600 });
  const gate = createGate({ booksRequired: false, verifier, limiter })!;
  const first = await gate.decide(request("good-alice"));
  assert.equal(first.ok, true);
  // The address has one request left; alice's later requests use her own bucket.
  for (let i = 0; i < 2; i++) assert.equal((await gate.decide(request("good-alice"))).ok, true);
  assert.equal((await gate.decide(request("good-alice"))).ok, false);
  assert.equal((await gate.decide(request("good-bob"))).ok, true); // the address's last one
  const carol = await gate.decide(request("good-carol"));
  assert.equal(carol.ok ? 200 : carol.error.status, 429);
  assert.equal(verifier.checks, 2);
});

Deno.test("over a socket: fresh tokens from an exhausted address get 429, not a check", async () => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET, RATE_LIMIT: "3/h" });
  try {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const token = await hsToken({ sub: `user-${i}` }, { secret: `wrong-${SECRET}` });
      const res = await fetch(`${server.httpUrl}/addresses`, { headers: bearer(token) });
      await res.body?.cancel();
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [401, 401, 401, 429, 429, 429]);
    const valid = await hsToken({ sub: "late", scope: "addresses:read" });
    const res = await fetch(`${server.httpUrl}/addresses`, { headers: bearer(valid) });
    await res.body?.cancel();
    assert.equal(res.status, 429);
  } finally {
    await server.close();
  }
});
