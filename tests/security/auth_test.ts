import assert from "node:assert/strict";
import { FIELD_DOORS, sendThrough } from "../support/field_doors.ts";
import { addressBook, bearer } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, noneToken, SECRET, testKey } from "../support/tokens.ts";

const ISSUER = "https://issuer.test";
const AUDIENCE = "books-api";
const ALL = "addresses:read addresses:write";

interface ErrorBody {
  errors: { error: string; message: string; detail: string; help: string }[];
}

async function expectRefusal(
  res: Response,
  status: 401 | 403,
  challenge: string,
): Promise<ErrorBody> {
  const body = await res.json() as ErrorBody;
  assert.equal(res.status, status, JSON.stringify(body));
  assert.equal(res.headers.get("www-authenticate"), challenge);
  assert.equal(res.headers.get("x-content-type-options"), "nosniff");
  assert.equal(body.errors.length, 1);
  assert.equal(body.errors[0]!.error, status === 401 ? "unauthorized" : "forbidden");
  assert.ok(body.errors[0]!.message && body.errors[0]!.detail && body.errors[0]!.help);
  return body;
}

const NO_TOKEN = 'Bearer realm="books"';
const INVALID = 'Bearer realm="books", error="invalid_token"';

Deno.test("HS256: every kind of bad token is 401 and nothing leaks to logs or bodies", async () => {
  const server = await startTestServer({
    AUTH_JWT_SECRET: SECRET,
    AUTH_ISSUER: ISSUER,
    AUTH_AUDIENCE: AUDIENCE,
  });
  const sent: string[] = [];
  const bodies: string[] = [];
  const get = async (headers: Record<string, string>) => {
    if (headers.authorization) sent.push(headers.authorization);
    const res = await fetch(`${server.httpUrl}/addresses`, { headers });
    bodies.push(await res.clone().text());
    return res;
  };
  const claims = { sub: "alice", iss: ISSUER, aud: AUDIENCE, scope: ALL };
  const now = Math.floor(Date.now() / 1000);
  try {
    await expectRefusal(await get({}), 401, NO_TOKEN);
    await expectRefusal(await get({ authorization: "Basic YWxpY2U6c2VjcmV0" }), 401, NO_TOKEN);
    await expectRefusal(await get(bearer("not-a-jwt")), 401, INVALID);
    const cases: [string, Promise<string> | string, RegExp][] = [
      ["forged", hsToken(claims, { secret: "another-secret-of-at-least-32-bytes!!" }), /signature/],
      ["expired", hsToken(claims, { exp: now - 120 }), /expired/],
      ["alg none", noneToken(claims), /algorithm|malformed/],
      ["wrong audience", hsToken({ ...claims, aud: "other" }), /aud/],
      ["wrong issuer", hsToken({ ...claims, iss: "https://evil.test" }), /iss/],
      ["no sub", hsToken({ iss: ISSUER, aud: AUDIENCE, scope: ALL }), /sub/],
      ["no exp", hsToken(claims, { exp: null }), /exp/],
      ["not yet valid", hsToken({ ...claims, nbf: now + 600 }), /not valid yet/],
      ["RS256 against a secret", (await testKey("RS256", "k1")).sign(claims), /algorithm/],
    ];
    for (const [name, token, reason] of cases) {
      const body = await expectRefusal(await get(bearer(await token)), 401, INVALID);
      assert.match(body.errors[0]!.detail, reason, name);
    }
    // Within the 60 s leeway an expired token still passes.
    assert.equal((await get(bearer(await hsToken(claims, { exp: now - 30 })))).status, 200);
    const good = await hsToken(claims);
    const ok = await get(bearer(good));
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), { addresses: [], nextCursor: null });
    // A second use is answered from the verification cache: same result.
    assert.equal((await get(bearer(good))).status, 200);
    // German message, problem+json form.
    const de = await fetch(`${server.httpUrl}/addresses`, {
      headers: { "accept-language": "de", accept: "application/problem+json" },
    });
    assert.equal(de.status, 401);
    assert.equal(de.headers.get("content-type"), "application/problem+json");
    assert.equal((await de.json()).title, "Bitte melden Sie sich an.");
  } finally {
    await server.close();
  }
  const everything = JSON.stringify(server.logs) + bodies.join("\n");
  assert.ok(!everything.includes(SECRET), "the secret appears in a log line or body");
  for (const header of sent) {
    const token = header.replace(/^\S+ /, "");
    assert.ok(!everything.includes(token), `a token appears in a log line or body: ${token}`);
  }
  assert.ok(server.logs.some((l) => l.msg === "request" && l.status === 401));
});

Deno.test("scopes: read, write, scope or scp, 403 names the missing scope", async () => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET });
  const url = `${server.httpUrl}/addresses`;
  const body = JSON.stringify({ name: "Ada", city: "London", postalCode: "NW1 1AA" });
  const post = (token: string) => addressBook(server.httpUrl, bearer(token)).create(body);
  try {
    const reader = await hsToken({ sub: "alice", scope: "addresses:read" });
    const writer = await hsToken({ sub: "alice", scp: ["addresses:write"] });
    const both = await hsToken({ sub: "alice", scp: ["addresses:read", "addresses:write"] });
    assert.equal((await fetch(url, { headers: bearer(reader) })).status, 200);
    await (await fetch(url, { headers: bearer(reader) })).body?.cancel();
    await expectRefusal(
      await post(reader),
      403,
      'Bearer error="insufficient_scope", scope="addresses:write"',
    );
    await expectRefusal(
      await fetch(url, { headers: bearer(writer) }),
      403,
      'Bearer error="insufficient_scope", scope="addresses:read"',
    );
    const created = await post(writer);
    assert.equal(created.status, 201);
    const { id } = await created.json();
    for (const method of ["PUT", "PATCH", "DELETE"]) {
      const res = await fetch(`${url}/${id}`, {
        method,
        headers: { ...bearer(reader), "content-type": "application/json" },
        body: method === "DELETE" ? undefined : body,
      });
      await expectRefusal(res, 403, 'Bearer error="insufficient_scope", scope="addresses:write"');
    }
    // Nothing was changed by the refused calls.
    const read = await fetch(`${url}/${id}`, { headers: bearer(both) });
    assert.equal(read.status, 200);
    assert.equal((await read.json()).city, "London");
    // Books stay public unless AUTH_BOOKS=required; the catalogue is the hot path.
    const books = await fetch(`${server.httpUrl}/rest/books`);
    assert.equal(books.status, 200);
    assert.equal(books.headers.get("x-content-type-options"), "nosniff");
    await books.body?.cancel();
    // A bad token is refused even on a public path (RFC 6750: invalid_token).
    await expectRefusal(
      await fetch(`${server.httpUrl}/rest/books`, { headers: bearer("x.y.z") }),
      401,
      INVALID,
    );
    // Probes are never gated.
    const health = await fetch(`${server.httpUrl}/healthz`, { headers: bearer("x.y.z") });
    assert.equal(health.status, 200);
    await health.body?.cancel();
  } finally {
    await server.close();
  }
});

Deno.test("the Authorization field reads alike on every framing of both ports: repeats and whitespace", async (t) => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET });
  const urls = { httpUrl: server.httpUrl, grpcUrl: server.grpcUrl! };
  const token = (sub: string) => hsToken({ sub, scope: "addresses:read addresses:write" });
  const alice = `Bearer ${await token("alice")}`;
  const bob = `Bearer ${await token("bob")}`;
  for (const [caller, name] of [[alice, "Alice"], [bob, "Bob"]] as const) {
    const res = await addressBook(server.httpUrl, { authorization: caller }).create({
      name,
      city: "London",
      postalCode: "W1J 7NT",
    });
    assert.equal(res.status, 201);
  }
  const ONE = "Send one Authorization field with one token: Authorization: Bearer <token>.";
  // Field lines as sent; over HTTP/1.1 whitespace around a value is not part of it (RFC 9112),
  // over HTTP/2 it makes the request malformed (RFC 9113 8.2.1), whichever port takes it.
  const cases: { lines: string[]; h2: string; http1: string }[] = [
    { lines: [alice], h2: "Alice", http1: "Alice" },
    { lines: [alice, "Bearer x"], h2: ONE, http1: ONE },
    { lines: ["Bearer x", alice], h2: ONE, http1: ONE },
    { lines: [alice, alice], h2: ONE, http1: ONE },
    { lines: [`${bob} `, alice], h2: ONE, http1: ONE },
    { lines: [alice, `\t${bob}`], h2: ONE, http1: ONE },
    { lines: [`${alice} `], h2: ONE, http1: "Alice" },
    { lines: [` ${alice}`], h2: ONE, http1: "Alice" },
    { lines: [`${alice}\t`], h2: ONE, http1: "Alice" },
    { lines: [""], h2: ONE, http1: ONE },
  ];
  try {
    for (const door of FIELD_DOORS) {
      await t.step(`${door.via}, ${door.name}`, async () => {
        for (const c of cases) {
          const res = await sendThrough(urls, door, c.lines.map((v) => ["authorization", v]));
          const answer = door.read(res.status, res.fields, res.body);
          const expected = door.via === "http1" ? c.http1 : c.h2;
          const where = `${
            JSON.stringify(c.lines.map((l) => l.replace(/[A-Za-z0-9._-]{20,}/, "…")))
          }`;
          if (expected === "Alice" || expected === "Bob") {
            assert.ok(answer.ok, `${where}: ${JSON.stringify(answer)}`);
            assert.ok(answer.body.includes(expected), `${where}: not ${expected}'s`);
            assert.ok(!answer.body.includes(expected === "Alice" ? "Bob" : "Alice"), where);
          } else {
            assert.ok(!answer.ok, `${where}: admitted`);
            assert.match(
              answer.code,
              /^(?:401 (?:unauthorized|unauthenticated)|200 grpc-status 16)$/,
            );
            assert.equal(answer.message, expected, where);
            if (door.via !== "h2 grpc" || door.name === "Connect") {
              assert.equal(res.fields.get("www-authenticate"), NO_TOKEN, where);
            }
          }
        }
      });
    }
  } finally {
    await server.close();
  }
});
