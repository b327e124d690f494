/**
 * Cost before trust (docs/security.md, Authentication): the gate takes the rate limit before it
 * spends a signature check on a token it has not seen, and remembers tokens that failed. The gate
 * is built from its parts with a verifier that counts its signature checks; the statuses are also
 * checked over a socket against the real server. A refused call is answered without its body
 * being read, inflated or parsed, on every RPC framing of both ports.
 */
import assert from "node:assert/strict";
import { type Identity, TokenError, type Verifier } from "../../security/verifier.ts";
import { createGate, type GateRequest } from "../../security/gate.ts";
import { createRateLimiter } from "../../security/rate_limit.ts";
import { gzipSync } from "node:zlib";
import { bearer, BOOKS_PATH } from "../support/requests.ts";
import {
  answerOn,
  clientStart,
  connectRaw,
  Flag,
  frame,
  FrameType,
  headerBlock,
} from "../support/h2_raw.ts";
import { grpcWebTrailer } from "../support/rpc_clients.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

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

/** 4 MB of 0xff gzipped (about 4 KB): inflated, it is no protobuf message and no JSON. */
const BOMB = gzipSync(new Uint8Array(4_000_000).fill(0xff));

/** A gRPC or gRPC-Web envelope of `payload`, compressed when `flags` is 1. */
function envelope(payload: Uint8Array, flags = 0): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(5 + payload.byteLength);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, payload.byteLength);
  out.set(payload, 5);
  return out;
}

/** Bodies no service could decode, as each framing carries them. */
const UNDECODABLE: [string, Record<string, string>, Uint8Array<ArrayBuffer>][] = [
  ["Connect JSON, cut short", { "content-type": "application/json" }, encode('{"x":')],
  ["Connect JSON, a gzip bomb", {
    "content-type": "application/json",
    "content-encoding": "gzip",
  }, BOMB],
  ["Connect proto, not protobuf", { "content-type": "application/proto" }, encode("\xff\xff")],
  [
    "gRPC-Web, not protobuf",
    { "content-type": "application/grpc-web+proto" },
    envelope(
      new Uint8Array([0xff, 0xff, 0xff]),
    ),
  ],
  ["gRPC-Web, a gzip bomb", {
    "content-type": "application/grpc-web+proto",
    "grpc-encoding": "gzip",
  }, envelope(BOMB, 1)],
  [
    "gRPC, not protobuf",
    { "content-type": "application/grpc", te: "trailers" },
    envelope(
      new Uint8Array([0xff, 0xff, 0xff]),
    ),
  ],
  ["gRPC, a gzip bomb", {
    "content-type": "application/grpc",
    "grpc-encoding": "gzip",
    te: "trailers",
  }, envelope(BOMB, 1)],
];

function encode(text: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(text);
}

/** The gRPC code of an RPC answer: `grpc-status` (fields or gRPC-Web trailer frame) or Connect's. */
function codeOf(status: number, fields: Headers, body: Uint8Array): string {
  const type = fields.get("content-type") ?? "";
  const grpcStatus = fields.get("grpc-status") ?? grpcWebTrailer(type, body)?.get("grpc-status");
  if (grpcStatus) return grpcStatus;
  if (type.startsWith("application/json")) {
    return `${status} ${JSON.parse(new TextDecoder().decode(body)).code}`;
  }
  return `HTTP ${status}`;
}

Deno.test("over sockets: a refused call is answered unread on every RPC framing of both ports", async (t) => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET, AUTH_BOOKS: "required" });
  // Not seen before: verified while the call waits, then refused for its missing scope.
  const scopeless = () => hsToken({ sub: `s-${crypto.randomUUID()}`, scope: "" });
  const refusedAs = (token: string | undefined, grpc: boolean) =>
    token === undefined
      ? (grpc ? "16" : "401 unauthenticated")
      : (grpc ? "7" : "403 permission_denied");
  const ports: [string, string][] = [["HTTP port (h2c)", server.httpUrl], [
    "gRPC port",
    server.grpcUrl!,
  ]];
  try {
    for (const [name, headers, body] of UNDECODABLE) {
      const grpc = "te" in headers || headers["content-type"]!.startsWith("application/grpc");
      for (const token of [undefined, await scopeless()]) {
        const auth: Record<string, string> = bearer(token);
        const who = token === undefined ? "no token" : "a token without the scope";
        if (!("te" in headers)) {
          await t.step(`HTTP port (HTTP/1.1), ${name}, ${who}`, async () => {
            const res = await fetch(`${server.httpUrl}${BOOKS_PATH}`, {
              method: "POST",
              headers: { ...headers, ...auth },
              body,
            });
            const bytes = new Uint8Array(await res.arrayBuffer());
            assert.equal(codeOf(res.status, res.headers, bytes), refusedAs(token, grpc));
          });
        }
        for (const [port, url] of ports) {
          if ("te" in headers && url === server.httpUrl) continue; // gRPC: the gRPC port only
          await t.step(`${port}, ${name}, ${who}, the body never ended`, async () => {
            const conn = await connectRaw(url);
            try {
              conn.write(clientStart());
              const fields: [string, string][] = [
                [":method", "POST"],
                [":scheme", "http"],
                [":path", BOOKS_PATH],
                [":authority", "localhost"],
                ...Object.entries({ ...headers, ...auth }),
              ];
              conn.write(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, headerBlock(fields)));
              // Part of the body, and never its end: only an answer given unread can come.
              conn.write(frame(FrameType.DATA, 0, 1, body.subarray(0, 1000)));
              const answer = await answerOn(conn, 1);
              assert.equal(
                codeOf(answer.status, answer.fields, answer.body),
                refusedAs(token, grpc),
              );
              assert.match(answer.fields.get("www-authenticate") ?? "", /^Bearer /);
            } finally {
              conn.socket.destroy();
            }
          });
        }
      }
    }
    // Both ports still answer a call with the scope.
    const reader = `Bearer ${await hsToken({ sub: "reader", scope: "books:read" })}`;
    const ok = await fetch(`${server.httpUrl}${BOOKS_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: reader },
      body: "{}",
    });
    assert.equal(ok.status, 200);
    assert.ok((await ok.json()).book.length > 0);
  } finally {
    await server.close();
  }
  assert.deepEqual(server.logs.filter((l) => l.msg === "unhandled error"), []);
});
