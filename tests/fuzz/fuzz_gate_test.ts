/**
 * Property-based fuzzing of the gate (docs/fuzzing.md): random REST requests with random bearer
 * tokens (valid, expired, wrongly signed, `alg: none`, garbage, without `sub`, with random
 * scopes) and random Origins, against a server with authentication, `AUTH_BOOKS=required` and
 * CORS on. Besides the REST invariants: a protected success needs a valid token with the scope;
 * 401 and 403 carry `WWW-Authenticate`; each owner's addresses change only through that owner's
 * successful writes; CORS headers go to the allowed origin only.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { fuzz } from "../support/fuzz.ts";
import { body, headers, method, path, pathSpelling } from "../support/fuzz_http.ts";
import { type Address, applyWrite, checkAnswer, requestOf, routeOf } from "../support/fuzz_rest.ts";
import { addressBook } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, noneToken } from "../support/tokens.ts";

const SECRET = "fuzz-secret-of-at-least-thirty-two-bytes!";
const ALLOWED_ORIGIN = "https://app.example";
const OWNERS = ["alice", "bob"] as const;
const ALL_SCOPES = "addresses:read addresses:write books:read";

type TokenKind = "valid" | "expired" | "wrong-secret" | "none" | "no-sub" | "garbage" | "absent";

interface TokenSpec {
  kind: TokenKind;
  owner: (typeof OWNERS)[number];
  scopes: string[];
  scheme: string;
}

const tokenSpec: fc.Arbitrary<TokenSpec> = fc.record({
  kind: fc.oneof(
    { weight: 6, arbitrary: fc.constant<TokenKind>("valid") },
    {
      weight: 4,
      arbitrary: fc.constantFrom<TokenKind>(
        "expired",
        "wrong-secret",
        "none",
        "no-sub",
        "garbage",
        "absent",
      ),
    },
  ),
  owner: fc.constantFrom(...OWNERS),
  scopes: fc.subarray(["addresses:read", "addresses:write", "books:read", "admin", "*"]),
  scheme: fc.constantFrom("Bearer ", "Bearer ", "Bearer ", "bearer ", "Basic ", "", "Bearer  "),
});

/** An HS256 token for the server's secret (or `secret`), valid an hour (or until `exp`). */
function sign(claims: Record<string, unknown>, secret = SECRET, exp?: number) {
  return hsToken(claims, { secret, ...(exp === undefined ? {} : { exp }) });
}

/** Authorization header value for a spec, or undefined when none is sent. */
async function authorization(spec: TokenSpec): Promise<string | undefined> {
  const claims = { sub: spec.owner, scope: spec.scopes.join(" ") };
  let token: string;
  switch (spec.kind) {
    case "absent":
      return undefined;
    case "valid":
      token = await sign(claims);
      break;
    case "expired":
      token = await sign(claims, SECRET, Math.floor(Date.now() / 1000) - 3600);
      break;
    case "wrong-secret":
      token = await sign(claims, "another-secret-of-at-least-thirty-two-bytes");
      break;
    case "none":
      token = noneToken(claims);
      break;
    case "no-sub":
      token = await sign({ scope: claims.scope });
      break;
    case "garbage":
      token = "a.b.c";
  }
  return spec.scheme + token;
}

/** The scope a request needs to succeed, or undefined when it is public. */
function neededScope(method: string, route: string): string | undefined {
  if (route === "/addresses" || route.startsWith("/addresses/")) {
    return method === "GET" || method === "HEAD" ? "addresses:read" : "addresses:write";
  }
  if (route === "/rest/books" || route.startsWith("/api/book/")) return "books:read";
  return undefined;
}

const gateCase = fc.record({
  method,
  // Other spellings too, as far as fetch sends them (tests/fuzz/fuzz_spelling_test.ts sends them raw).
  path: fc.oneof({ weight: 4, arbitrary: path }, { weight: 1, arbitrary: pathSpelling() }),
  headers,
  body,
  token: tokenSpec,
  origin: fc.constantFrom(ALLOWED_ORIGIN, "https://evil.example", "null", undefined),
});

Deno.test("gate fuzz: random tokens and origins never get past the gate, a 5xx or the wrong CORS", async () => {
  const server = await startTestServer({
    AUTH_JWT_SECRET: SECRET,
    AUTH_BOOKS: "required",
    CORS_ORIGINS: ALLOWED_ORIGIN,
  });
  const base = server.httpUrl;
  const full: Record<string, string> = {};
  for (const owner of OWNERS) {
    full[owner] = `Bearer ${await sign({ sub: owner, scope: ALL_SCOPES })}`;
  }
  const models = new Map(OWNERS.map((o) => [o, new Map<number, Address>()]));
  // How often each kind of answer came, so a run shows it reached past the gate too.
  const seen: Record<string, number> = {};
  try {
    await fuzz("gate", 300, gateCase, async (g) => {
      const c = g.method === "GET" || g.method === "HEAD"
        ? { method: g.method, path: g.path, headers: { ...g.headers } }
        : { method: g.method, path: g.path, headers: { ...g.headers }, body: g.body };
      delete c.headers["authorization"];
      const auth = await authorization(g.token);
      if (auth !== undefined) c.headers["authorization"] = auth;
      if (g.origin !== undefined) c.headers["origin"] = g.origin;
      const request = requestOf(base, c);
      if (!request) return;
      const res = await fetch(request);
      const text = new TextDecoder().decode(await res.arrayBuffer());
      const where = `${c.method} ${c.path.slice(0, 80)} token ${
        JSON.stringify(g.token)
      } -> ${res.status}`;
      const answer = checkAnswer(c, res, text);
      if (res.status === 400 && text === "") return; // a head too large for the HTTP layer
      const route = routeOf(c.path);
      const scope = neededScope(c.method, route);
      const kind = scope === undefined ? "public" : res.status < 300 ? "admitted" : `${res.status}`;
      seen[kind] = (seen[kind] ?? 0) + 1;
      if (scope !== undefined && res.status < 300 && c.method !== "OPTIONS") {
        assert.equal(g.token.kind, "valid", `${where}: success without a valid token`);
        assert.ok(
          /^bearer +$/i.test(g.token.scheme),
          `${where}: success with scheme ${g.token.scheme}`,
        );
        assert.ok(g.token.scopes.includes(scope), `${where}: success without ${scope}`);
      }
      if (res.status === 401 || res.status === 403) {
        assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer /, where);
      }
      const acao = res.headers.get("access-control-allow-origin");
      if (g.origin === ALLOWED_ORIGIN) {
        assert.equal(acao, ALLOWED_ORIGIN, `${where}: no CORS for the allowed origin`);
      } else assert.equal(acao, null, `${where}: CORS for origin ${g.origin}`);
      if (g.token.kind === "valid" && /^bearer +$/i.test(g.token.scheme)) {
        applyWrite(models.get(g.token.owner)!, c, res, answer);
      }
      for (const owner of OWNERS) {
        const stored = await addressBook(base, { authorization: full[owner]! }).listAll();
        const expected = [...models.get(owner)!.values()].sort((a, b) => a.id - b.id);
        assert.deepEqual(stored, expected, `${where}: ${owner}'s addresses changed`);
      }
    });
    console.log(`gate answers: ${JSON.stringify(seen)}`);
    assert.ok((seen.admitted ?? 0) > 0 && (seen["401"] ?? 0) > 0, "the gate was not exercised");
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    assert.deepEqual(server.logs.filter((l) => l.msg === "unhandled error"), []);
    const logged = JSON.stringify(server.logs);
    assert.ok(!logged.includes(full.alice!.slice(7)), "a token reached the log");
  } finally {
    await server.close();
  }
});
