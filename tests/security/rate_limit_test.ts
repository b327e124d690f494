/**
 * Rate limits: exhaustion and recovery on each protocol, keys per client, bounded memory; every
 * request is charged (refused spellings, any method on a probe's path) but the probes' own.
 */
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { createRateLimiter } from "../../security/rate_limit.ts";
import { bearer, BOOKS_PATH, connectJson, graphql } from "../support/requests.ts";
import { h2c, rawHttp1, type RawRequest } from "../support/raw_http.ts";
import { booksCode, everyTransport } from "../support/rpc_clients.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

Deno.test("token bucket: burst, refill, headers' numbers, bounded memory", () => {
  let now = 0;
  const limiter = createRateLimiter({ limit: 3, windowSeconds: 60 }, {
    maxClients: 100,
    now: () => now,
  });
  assert.equal(limiter.policy, '"default";q=3;w=60');
  const a = [1, 2, 3, 4].map(() => limiter.take("a"));
  assert.deepEqual(a.map((d) => [d.allowed, d.remaining]), [
    [true, 2],
    [true, 1],
    [true, 0],
    [false, 0],
  ]);
  assert.equal(a[3]!.retryAfter, 20); // one request every 20 s
  assert.equal(a[3]!.resetSeconds, 60);
  assert.equal(limiter.take("b").allowed, true); // another client has its own bucket
  now += 20_000;
  const back = limiter.take("a");
  assert.equal(back.allowed, true);
  assert.equal(back.remaining, 0);
  now += 3_600_000;
  assert.equal(limiter.take("a").remaining, 2); // full again, never more than the limit
  for (let i = 0; i < 10_000; i++) limiter.take(`flood-${i}`);
  assert.equal(limiter.size, 100);
});

Deno.test("token bucket: several calls at once are taken all or none", () => {
  let now = 0;
  const limiter = createRateLimiter({ limit: 4, windowSeconds: 60 }, { now: () => now });
  assert.deepEqual(limiter.take("a", 3), {
    allowed: true,
    remaining: 1,
    resetSeconds: 45,
    retryAfter: 0,
  });
  const refused = limiter.take("a", 2);
  assert.equal(refused.allowed, false);
  assert.equal(refused.remaining, 1, "nothing taken");
  assert.equal(refused.retryAfter, 15); // one more call's worth
  // More than a full bucket waits for a full one, and is refused again then.
  assert.equal(limiter.take("a", 5).retryAfter, 45);
  now += 60_000;
  assert.equal(limiter.take("a", 5).allowed, false);
  assert.equal(limiter.take("a", 4).allowed, true);
});

function sleep(seconds: number) {
  return new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}

Deno.test("RATE_LIMIT: each protocol is refused when exhausted and served again after Retry-After", async (t) => {
  const server = await startTestServer({ RATE_LIMIT: "2/s", AUTH_JWT_SECRET: SECRET });
  const http = (path: string, init: RequestInit = {}) => fetch(`${server.httpUrl}${path}`, init);
  // Each protocol: call until refused, check the refusal, wait Retry-After, call again.
  const httpCases: [string, () => Promise<Response>, (res: Response) => Promise<void>][] = [
    ["REST (hot read)", () => http("/rest/books"), async (res) => {
      assert.equal((await res.json()).errors[0].error, "rate-limited");
    }],
    ["REST (router)", () => http("/addresses"), async (res) => {
      assert.equal((await res.json()).errors[0].error, "rate-limited");
    }],
    ["GraphQL", () => graphql(server.httpUrl, '{"query":"{books{title}}"}'), async (res) => {
      assert.equal((await res.json()).errors[0].extensions.code, "rate-limited");
    }],
    ["Connect JSON (HTTP port)", () => connectJson(server.httpUrl), async (res) => {
      assert.equal((await res.json()).code, "resource_exhausted");
    }],
  ];
  try {
    for (const [name, call, check] of httpCases) {
      await t.step(name, async () => {
        let res: Response | undefined;
        for (let i = 0; i < 10; i++) {
          res = await call();
          if (res.status === 429) break;
          await res.body?.cancel();
          assert.ok(res.headers.get("ratelimit"), name);
        }
        assert.equal(res!.status, 429);
        assert.equal(res!.headers.get("ratelimit-policy"), '"default";q=2;w=1');
        assert.match(res!.headers.get("ratelimit") ?? "", /^"default";r=0;t=[0-9]+$/);
        const retryAfter = Number(res!.headers.get("retry-after"));
        assert.ok(retryAfter >= 1);
        await check(res!);
        await sleep(retryAfter);
        const again = await call();
        await again.body?.cancel();
        assert.notEqual(again.status, 429, name);
      });
    }

    await t.step("a token's sub has its own bucket, apart from its address", async () => {
      const token = await hsToken({ sub: "carol", scope: "addresses:read" });
      const auth = bearer(token);
      // A token not seen before is paid for by the address, before its signature is checked.
      const first = await http("/addresses", { headers: auth });
      await first.body?.cancel();
      assert.equal(first.status, 200);
      await (await http("/addresses")).body?.cancel();
      const anonymous = await http("/addresses");
      await anonymous.body?.cancel();
      assert.equal(anonymous.status, 429);
      const carol = await http("/addresses", { headers: auth });
      await carol.body?.cancel();
      assert.equal(carol.status, 200);
      await sleep(1);
    });

    // Connect JSON on the HTTP port is the fetch case above.
    const transports = everyTransport(server).filter(([name]) =>
      name !== "Connect JSON (HTTP port)"
    );
    for (const [name, transport] of transports) {
      await t.step(name, async () => {
        const codes: (Code | 0)[] = [];
        for (let i = 0; i < 10 && codes.at(-1) !== Code.ResourceExhausted; i++) {
          codes.push(await booksCode(transport));
        }
        assert.equal(codes.at(-1), Code.ResourceExhausted, `${name}: ${codes}`);
        await sleep(1);
        assert.equal(await booksCode(transport), 0);
      });
    }

    await t.step("probes are never limited", async () => {
      for (let i = 0; i < 5; i++) {
        const res = await http("/healthz");
        await res.body?.cancel();
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("ratelimit"), null);
      }
    });
  } finally {
    await server.close();
  }
});

Deno.test("an exhausted client gets 429 whatever it spells and whatever the method; only GET and HEAD probes are exempt", async (t) => {
  // One request per hour: the first call of a client is allowed, every later one refused.
  const server = await startTestServer({ RATE_LIMIT: "1/h" });
  const h2 = h2c(server.httpUrl);
  const grpc = h2c(server.grpcUrl!);
  try {
    const first = await rawHttp1(server.httpUrl, { method: "GET", target: "/rest/books" });
    assert.equal(first.status, 200);
    const refused: [string, string][] = [
      // Not canonical: refused before any route is read, and charged all the same.
      ["GET", "/%61ddresses"],
      ["GET", "/rest/./books"],
      ["POST", "/rest//books"],
      ["DELETE", "/addresses/1%2F"],
      // A probe's path, but not its route.
      ["FOO", "/healthz"],
      ["POST", "/readyz"],
      ["DELETE", "/healthz"],
      ["OPTIONS", "/readyz"],
      ["GET", "/healthz/"],
      ["GET", "/nowhere"],
    ];
    for (
      const [transport, send] of [["HTTP/1.1", (r: RawRequest) => rawHttp1(server.httpUrl, r)], [
        "h2c",
        (r: RawRequest) => h2.request(r),
      ]] as const
    ) {
      await t.step(`${transport}: every spelling and method is 429`, async () => {
        for (const [method, target] of refused) {
          const res = await send({ method, target });
          assert.equal(res.status, 429, `${method} ${target}: ${res.body}`);
          assert.equal(res.headers.get("retry-after"), "3600");
          assert.equal(JSON.parse(res.body).errors[0].error, "rate-limited");
        }
      });
      await t.step(`${transport}: GET and HEAD on the probes are not limited`, async () => {
        for (const method of ["GET", "HEAD"]) {
          for (const target of ["/healthz", "/readyz"]) {
            const res = await send({ method, target });
            assert.equal(res.status, 200, `${method} ${target}`);
            assert.equal(res.headers.get("ratelimit"), null);
          }
        }
      });
    }

    await t.step(
      "gRPC port: a spelling or another method of the health check is charged",
      async () => {
        const call = (method: string, target: string, type = "application/grpc") =>
          grpc.request({
            method,
            target,
            headers: { "content-type": type, te: "trailers" },
            body: method === "GET" ? undefined : new Uint8Array(5),
          });
        assert.equal((await call("POST", BOOKS_PATH)).headers.get("grpc-status"), "0");
        const encoded = await call("POST", "/%62ooks.v1.BooksService/books");
        assert.equal(encoded.headers.get("grpc-status"), String(Code.ResourceExhausted));
        const get = await call(
          "GET",
          "/grpc.health.v1.Health/Check?encoding=json&message=%7B%7D",
          "application/json",
        );
        assert.equal(get.status, 429, get.body);
        assert.equal(JSON.parse(get.body).code, "resource_exhausted");
        const check = await call("POST", "/grpc.health.v1.Health/Check");
        assert.equal(check.headers.get("grpc-status"), "0");
      },
    );
  } finally {
    h2.close();
    grpc.close();
    await server.close();
  }
});
