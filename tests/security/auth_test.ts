import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import {
  answerOn,
  clientStart,
  connectRaw,
  Flag,
  frame,
  FrameType,
  headerBlock,
} from "../support/h2_raw.ts";
import { rawHttp1 } from "../support/raw_http.ts";
import { addressBook, bearer, BOOKS_PATH } from "../support/requests.ts";
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

/** One call of the two-`Authorization` test: where it goes and how its refusal is read. */
interface TwiceCase {
  name: string;
  /** "http1": a plain socket to the HTTP port; else raw HTTP/2 frames to that port. */
  via: "http1" | "h2 http" | "h2 grpc";
  method: string;
  path: string;
  headers: [string, string][];
  body?: Uint8Array;
  /** The refusal's code and message as the protocol carries them. */
  read(status: number, fields: Headers, body: string): { code: string; message: string };
}

const restRefusal = (status: number, _: Headers, body: string) => {
  const error = JSON.parse(body).errors[0];
  return { code: `${status} ${error.error}`, message: error.detail };
};
const connectRefusal = (status: number, _: Headers, body: string) => {
  const error = JSON.parse(body);
  return { code: `${status} ${error.code}`, message: error.message };
};
const grpcRefusal = (status: number, fields: Headers) => ({
  code: `${status} grpc-status ${fields.get("grpc-status")}`,
  message: decodeURIComponent(fields.get("grpc-message") ?? ""),
});
const EMPTY_CALL = new Uint8Array(5);
const JSON_CALL = new TextEncoder().encode("{}");

const TWICE: TwiceCase[] = [
  ...(["http1", "h2 http"] as const).flatMap((via): TwiceCase[] => [
    { name: "REST", via, method: "GET", path: "/addresses", headers: [], read: restRefusal },
    {
      name: "GraphQL",
      via,
      method: "POST",
      path: "/graphql",
      headers: [["content-type", "application/json"]],
      body: new TextEncoder().encode('{"query":"{ books { title } }"}'),
      read: (status, _, body) => {
        const error = JSON.parse(body).errors[0];
        return { code: `${status} ${error.extensions.code}`, message: error.message };
      },
    },
    {
      name: "Connect",
      via,
      method: "POST",
      path: BOOKS_PATH,
      headers: [["content-type", "application/json"]],
      body: JSON_CALL,
      read: connectRefusal,
    },
    {
      name: "gRPC-Web",
      via,
      method: "POST",
      path: BOOKS_PATH,
      headers: [["content-type", "application/grpc-web+proto"]],
      body: EMPTY_CALL,
      read: grpcRefusal,
    },
  ]),
  ...([
    ["gRPC", "application/grpc", EMPTY_CALL, grpcRefusal],
    ["gRPC-Web", "application/grpc-web+proto", EMPTY_CALL, grpcRefusal],
    ["Connect", "application/json", JSON_CALL, connectRefusal],
  ] as const).map(([name, type, body, read]): TwiceCase => ({
    name,
    via: "h2 grpc",
    method: "POST",
    path: BOOKS_PATH,
    headers: [["content-type", type], ["te", "trailers"]],
    body,
    read,
  })),
];

Deno.test("two Authorization fields are refused alike on every framing of both ports", async (t) => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET, AUTH_BOOKS: "required" });
  const valid = `Bearer ${await hsToken({ sub: "ada", scope: "books:read addresses:read" })}`;
  const send = async (c: TwiceCase, authorization: string[]) => {
    const fields: [string, string][] = [
      ...c.headers,
      ...authorization.map((value): [string, string] => ["authorization", value]),
    ];
    if (c.via === "http1") {
      const res = await rawHttp1(server.httpUrl, {
        method: c.method,
        target: c.path,
        headers: fields,
        ...(c.body ? { body: c.body } : {}),
      });
      return { status: res.status, fields: res.headers, body: res.body };
    }
    const conn = await connectRaw(c.via === "h2 grpc" ? server.grpcUrl! : server.httpUrl);
    try {
      conn.write(clientStart());
      const block = headerBlock([
        [":method", c.method],
        [":scheme", "http"],
        [":path", c.path],
        [":authority", "localhost"],
        ...fields,
      ]);
      conn.write(
        frame(FrameType.HEADERS, Flag.END_HEADERS | (c.body ? 0 : Flag.END_STREAM), 1, block),
      );
      if (c.body) conn.write(frame(FrameType.DATA, Flag.END_STREAM, 1, c.body));
      const answer = await answerOn(conn, 1);
      return { status: answer.status, fields: answer.fields, body: answer.body.toString() };
    } finally {
      conn.socket.destroy();
    }
  };
  const seen = new Set<string>();
  try {
    for (const c of TWICE) {
      await t.step(`${c.via}, ${c.name}`, async () => {
        // The token alone is admitted: a refusal below is the second field's doing.
        const alone = await send(c, [valid]);
        assert.equal(alone.status, 200, alone.body);
        assert.notEqual(alone.fields.get("grpc-status") ?? "0", String(Code.Unauthenticated));
        for (const pair of [[valid, "Bearer x"], ["Bearer x", valid], [valid, valid]]) {
          const res = await send(c, pair);
          const { code, message } = c.read(res.status, res.fields, res.body);
          assert.match(code, /^(?:401 (?:unauthorized|unauthenticated)|200 grpc-status 16)$/);
          assert.equal(res.fields.get("www-authenticate"), NO_TOKEN);
          seen.add(message);
        }
      });
    }
    // One message everywhere, saying what to send.
    assert.deepEqual([...seen], [
      "Send one Authorization field with one token: Authorization: Bearer <token>.",
    ]);
  } finally {
    await server.close();
  }
});
