/**
 * The gate's headers reach every RPC answer alike: the same call admitted, refused for its token,
 * or refused for the rate limit is answered with the same RateLimit, WWW-Authenticate, Retry-After
 * and gRPC retry pushback whichever way it went: the gRPC listener's lean unary path (rpc/unary/) with a plain request
 * and with one holding an unknown field, Connect's own handlers on the gRPC port (JSON) and on
 * the HTTP port, and the answer to a method no service has. Before,
 * the fallback and the unknown method's answer carried no RateLimit headers, and the unknown
 * method's refusal no `grpc-retry-pushback-ms`.
 */
import assert from "node:assert/strict";
import type { Buffer } from "node:buffer";
import { h2Request } from "../support/raw_http.ts";
import { bearer, BOOKS_PATH, connectJson } from "../support/requests.ts";
import { type RawSession, rawSession } from "../support/rpc_clients.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const UNKNOWN_PATH = "/books.v1.BooksService/nothing";
// An uncompressed envelope of an empty BooksRequest; and one holding an unknown field (1 = 1),
// which the old books fast path handed to Connect's handler (the lean path takes both).
const EMPTY = new Uint8Array(5);
const UNKNOWN_FIELD = new Uint8Array([0, 0, 0, 0, 2, 0x08, 0x01]);

/** What an answer carries of the gate's decision, with the counters' values left out. */
function gateFields(headers: Headers): Record<string, string | null> {
  const retryAfter = headers.get("retry-after");
  const pushback = headers.get("grpc-retry-pushback-ms");
  return {
    "ratelimit-policy": headers.get("ratelimit-policy"),
    "ratelimit": headers.get("ratelimit")?.replace(/r=[0-9]+;t=[0-9]+$/, "r=…;t=…") ?? null,
    "retry-after": retryAfter === null ? null : Number(retryAfter) > 0 ? "> 0" : retryAfter,
    "grpc-retry-pushback-ms": pushback === null
      ? null
      : Number(pushback) === Number(retryAfter) * 1000
      ? "retry-after in ms"
      : pushback,
    "www-authenticate": headers.get("www-authenticate"),
  };
}

/** gRPC-Web's trailers, sent in the body as a frame flagged 0x80, added to `fields`. */
function withGrpcWebTrailers(fields: Headers, body: Buffer): Headers {
  for (let at = 0; at + 5 <= body.length; at += 5 + body.readUInt32BE(at + 1)) {
    if ((body[at]! & 0x80) === 0) continue;
    const text = body.subarray(at + 5, at + 5 + body.readUInt32BE(at + 1)).toString();
    for (const line of text.split("\r\n")) {
      const colon = line.indexOf(":");
      if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trim());
    }
  }
  return fields;
}

/** The same call every way it can be answered, with `auth` (or none). */
function calls(
  grpc: RawSession,
  httpUrl: string,
  auth: Record<string, string>,
): [string, () => Promise<{ headers: Headers; code: string }>][] {
  const h2 = (target: string, type: string, body: Uint8Array) => async () => {
    const res = await h2Request(grpc, {
      method: "POST",
      target,
      headers: { "content-type": type, te: "trailers", ...auth },
      body,
    });
    const headers = withGrpcWebTrailers(res.fields, res.body);
    return { headers, code: headers.get("grpc-status") ?? `HTTP ${res.status}` };
  };
  return [
    ["gRPC, lean path", h2(BOOKS_PATH, "application/grpc", EMPTY)],
    ["gRPC, lean path, an unknown field", h2(BOOKS_PATH, "application/grpc", UNKNOWN_FIELD)],
    ["gRPC-Web, gRPC port", h2(BOOKS_PATH, "application/grpc-web+proto", EMPTY)],
    ["Connect, gRPC port", h2(BOOKS_PATH, "application/proto", new Uint8Array())],
    ["gRPC, unknown method", h2(UNKNOWN_PATH, "application/grpc", EMPTY)],
    ["Connect, unknown method", h2(UNKNOWN_PATH, "application/proto", new Uint8Array())],
    ["Connect, HTTP port", async () => {
      const res = await connectJson(httpUrl, auth);
      await res.body?.cancel();
      return { headers: res.headers, code: `HTTP ${res.status}` };
    }],
  ];
}

async function answersOf(
  list: ReturnType<typeof calls>,
): Promise<{ name: string; code: string; fields: Record<string, string | null> }[]> {
  const out = [];
  for (const [name, call] of list) {
    const { headers, code } = await call();
    out.push({ name, code, fields: gateFields(headers) });
  }
  return out;
}

function assertAlike(
  answers: Awaited<ReturnType<typeof answersOf>>,
  expected: Record<string, string | null>,
) {
  for (const answer of answers) assert.deepEqual(answer.fields, expected, answer.name);
}

Deno.test("every way an RPC is answered carries the gate's headers alike", async (t) => {
  const server = await startTestServer({
    RATE_LIMIT: "20/h",
    AUTH_JWT_SECRET: SECRET,
    AUTH_BOOKS: "required",
  });
  using grpc = rawSession(server.grpcUrl!);
  const reader = bearer(await hsToken({ sub: "reader", scope: "books:read" }));
  const policy = '"default";q=20;w=3600';
  try {
    // The token verified once on each port: later calls are decided at once, so the lean path
    // may take them.
    await calls(grpc, server.httpUrl, reader)[3]![1]();
    await calls(grpc, server.httpUrl, reader)[6]![1]();

    await t.step("admitted: RateLimit on every answer", async () => {
      const answers = await answersOf(calls(grpc, server.httpUrl, reader));
      assert.deepEqual(answers.map((a) => a.code), [
        "0",
        "0",
        "0",
        "HTTP 200",
        "12",
        "HTTP 404",
        "HTTP 200",
      ]);
      assertAlike(answers, {
        "ratelimit-policy": policy,
        "ratelimit": '"default";r=…;t=…',
        "retry-after": null,
        "grpc-retry-pushback-ms": null,
        "www-authenticate": null,
      });
    });

    await t.step(
      "refused without a token: the challenge and RateLimit on every answer",
      async () => {
        const answers = await answersOf(calls(grpc, server.httpUrl, {}));
        assert.deepEqual(answers.map((a) => a.code), [
          "16",
          "16",
          "16",
          "HTTP 401",
          "16",
          "HTTP 401",
          "HTTP 401",
        ]);
        assertAlike(answers, {
          "ratelimit-policy": policy,
          "ratelimit": '"default";r=…;t=…',
          "retry-after": null,
          "grpc-retry-pushback-ms": null,
          "www-authenticate": 'Bearer realm="books"',
        });
      },
    );

    await t.step("refused for the rate limit: Retry-After and gRPC's pushback too", async () => {
      // The reader's bucket emptied on each port.
      const [, fast] = calls(grpc, server.httpUrl, reader)[0]!;
      const [, http] = calls(grpc, server.httpUrl, reader)[6]!;
      for (const call of [fast, http]) {
        for (let i = 0; i < 30 && (await call()).code.match(/^(0|HTTP 200)$/); i++);
      }
      const answers = await answersOf(calls(grpc, server.httpUrl, reader));
      assert.deepEqual(answers.map((a) => a.code), [
        "8",
        "8",
        "8",
        "HTTP 429",
        "8",
        "HTTP 429",
        "HTTP 429",
      ]);
      assertAlike(answers, {
        "ratelimit-policy": policy,
        "ratelimit": '"default";r=…;t=…',
        "retry-after": "> 0",
        "grpc-retry-pushback-ms": "retry-after in ms",
        "www-authenticate": null,
      });
    });
  } finally {
    await server.close();
  }
});
