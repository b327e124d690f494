/** JWKS file and JWKS URL keys: every accepted algorithm, wrong keys, algorithm confusion, rotation. */
import assert from "node:assert/strict";
import { SignJWT } from "jose";
import { createVerifier, TokenError } from "../../security/verifier.ts";
import { ConfigError } from "../../lib/config.ts";
import { bearer, connectJson } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";
import { noneToken, testKey } from "../support/tokens.ts";

const AUDIENCE = "books";
const ISSUER = "https://idp.test";
// A JWKS needs AUTH_AUDIENCE (and a JWKS URL AUTH_ISSUER): every token names both.
const SCOPES = { scope: "addresses:read books:read", aud: AUDIENCE, iss: ISSUER };
const CHECKED = { AUTH_AUDIENCE: AUDIENCE, AUTH_ISSUER: ISSUER };

async function status(url: string, token: string): Promise<[number, string | null]> {
  const res = await fetch(url, { headers: bearer(token) });
  await res.body?.cancel();
  return [res.status, res.headers.get("www-authenticate")];
}

const OK: [number, null] = [200, null];
const INVALID: [number, string] = [401, 'Bearer realm="books", error="invalid_token"'];

Deno.test("AUTH_JWKS_FILE: RS256, ES256 and EdDSA accepted; wrong key, none and HS256 refused", async () => {
  const keys = await Promise.all([
    testKey("RS256", "rs"),
    testKey("ES256", "es"),
    testKey("EdDSA", "ed"),
  ]);
  const dir = await Deno.makeTempDir();
  const file = `${dir}/jwks.json`;
  await Deno.writeTextFile(file, JSON.stringify({ keys: keys.map((k) => k.publicJwk) }));
  const server = await startTestServer({
    AUTH_JWKS_FILE: file,
    AUTH_BOOKS: "required",
    ...CHECKED,
  });
  const url = `${server.httpUrl}/addresses`;
  try {
    for (const key of keys) {
      assert.deepEqual(await status(url, await key.sign({ sub: key.alg, ...SCOPES })), OK);
    }
    // Another key pair under a configured kid: the signature does not verify.
    const impostor = await testKey("RS256", "rs");
    assert.deepEqual(await status(url, await impostor.sign({ sub: "x", ...SCOPES })), INVALID);
    // An unknown kid.
    const stranger = await testKey("ES256", "unknown");
    assert.deepEqual(await status(url, await stranger.sign({ sub: "x", ...SCOPES })), INVALID);
    assert.deepEqual(await status(url, noneToken({ sub: "x", ...SCOPES })), INVALID);
    // Algorithm confusion: HS256 "signed" with the public key's bytes is refused.
    const rsa = keys[0]!.publicJwk;
    for (const secret of [JSON.stringify(rsa), String(rsa.n)]) {
      const confused = await new SignJWT({ sub: "x", ...SCOPES })
        .setProtectedHeader({ alg: "HS256", kid: "rs" })
        .setExpirationTime("1h")
        .sign(new TextEncoder().encode(secret));
      assert.deepEqual(await status(url, confused), INVALID);
    }
    // The gRPC listener (its own process) reads the same file.
    const grpc = await connectJson(
      server.httpUrl,
      bearer(await keys[1]!.sign({ sub: "x", ...SCOPES })),
    );
    assert.equal(grpc.status, 200);
    await grpc.body?.cancel();
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("AUTH_JWKS_FILE: an unreadable file or one with private keys stops start-up", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await assert.rejects(
      startTestServer({ AUTH_JWKS_FILE: `${dir}/missing.json`, ...CHECKED }),
      (error: Error) =>
        error instanceof ConfigError && /^invalid AUTH_JWKS_FILE=/.test(error.message),
    );
    const { publicJwk } = await testKey("ES256", "es");
    await Deno.writeTextFile(
      `${dir}/private.json`,
      JSON.stringify({ keys: [{ ...publicJwk, d: "x" }] }),
    );
    await assert.rejects(
      startTestServer({ AUTH_JWKS_FILE: `${dir}/private.json`, ...CHECKED }),
      (error: Error) => error instanceof ConfigError && /public keys only/.test(error.message),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A JWKS endpoint served by Deno.serve, whose key set the test can replace. */
function jwksServer(initial: object[]) {
  let keys = initial;
  let fetches = 0;
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () => {
    fetches++;
    return Response.json({ keys });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/.well-known/jwks.json`,
    set: (next: object[]) => (keys = next),
    fetches: () => fetches,
    close: () => server.shutdown(),
  };
}

Deno.test("AUTH_JWKS_URL: keys fetched over HTTP, cached, and unknown keys refused", async () => {
  const a = await testKey("ES256", "a");
  const b = await testKey("ES256", "b");
  const jwks = jwksServer([a.publicJwk]);
  const server = await startTestServer({ AUTH_JWKS_URL: jwks.url, ...CHECKED });
  const url = `${server.httpUrl}/addresses`;
  try {
    for (let i = 0; i < 3; i++) {
      const token = await a.sign({ sub: `s${i}`, ...SCOPES });
      assert.deepEqual(await status(url, token), OK);
    }
    assert.deepEqual(
      await status(url, await a.sign({ sub: "x", ...SCOPES, aud: "other" })),
      INVALID,
    );
    assert.deepEqual(
      await status(url, await b.sign({ sub: "x", ...SCOPES })),
      INVALID,
    );
    // The HTTP process fetched the set once for three tokens (and once more at most for the
    // unknown kid); the gRPC child fetches only when it verifies a token.
    assert.ok(jwks.fetches() <= 2, `fetched ${jwks.fetches()} times`);
  } finally {
    await server.close();
    await jwks.close();
  }
});

Deno.test("AUTH_JWKS_URL unreachable: 503 with Retry-After (not the client's fault)", async () => {
  const key = await testKey("ES256", "a");
  const gone = jwksServer([key.publicJwk]);
  const url = gone.url;
  await gone.close();
  const server = await startTestServer({ AUTH_JWKS_URL: url, ...CHECKED });
  try {
    const token = await key.sign({ sub: "x", ...SCOPES });
    const res = await fetch(`${server.httpUrl}/addresses`, { headers: bearer(token) });
    assert.equal(res.status, 503);
    assert.equal(res.headers.get("retry-after"), "5");
    assert.equal((await res.json()).errors[0].error, "service-unavailable");
  } finally {
    await server.close();
  }
});

Deno.test("JWKS URL rotation: a new key is fetched when a token names it", async () => {
  const old = await testKey("RS256", "2026-01");
  const next = await testKey("RS256", "2026-02");
  const jwks = jwksServer([old.publicJwk]);
  try {
    const verifier = await createVerifier(
      {
        secret: undefined,
        jwksFile: undefined,
        jwksUrl: jwks.url,
        issuer: undefined,
        audience: undefined,
        booksRequired: false,
      },
      { jwksCooldownMs: 0, jwksMaxAgeMs: 50 },
    );
    const first = await verifier.verify(await old.sign({ sub: "a" }));
    assert.equal(first.subject, "a");
    jwks.set([old.publicJwk, next.publicJwk]);
    const rotated = await verifier.verify(await next.sign({ sub: "b", scp: ["x"] }));
    assert.equal(rotated.subject, "b");
    assert.deepEqual([...rotated.scopes], ["x"]);
    jwks.set([next.publicJwk]);
    // A removed key is refused once the cached set is older than its maximum age.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const retired = await old.sign({ sub: "c" });
    await assert.rejects(Promise.resolve().then(() => verifier.verify(retired)), TokenError);
    assert.ok(jwks.fetches() >= 2);
  } finally {
    await jwks.close();
  }
});
