/**
 * AddressService's failures over sockets: each bad request gets the code REST gives the request
 * that means the same (as google.rpc.ErrorInfo.reason, and the gRPC status the code maps to)
 * and stores nothing; preconditions, idempotency across styles, field masks, the gate (tokens,
 * scopes, rate limit) and ownership across styles.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { Code, type ConnectError, type Transport } from "@connectrpc/connect";
import { BadRequestSchema } from "../../rpc/gen/google/rpc/error_details_pb.ts";
import { GRPC_CODE_OF } from "../../rpc/connect/errors.ts";
import type { ErrorCode } from "../../lib/errors.ts";
import { EXAMPLE_INPUT, REQUIRED_FIELD_NAMES } from "../../lib/address.ts";
import {
  addressBook,
  bearer,
  errorCode,
  type Fields,
  idempotencyKey,
  JSON_TYPE,
  MERGE_PATCH,
  taggedInput,
} from "../support/requests.ts";
import {
  addressClient,
  connectTransport,
  errorInfo,
  type GrpcJsAnswer,
  grpcJsClient,
  grpcJsErrorInfo,
  grpcTransport,
  rawSession,
  rpcFailure,
} from "../support/rpc_clients.ts";
import { startTestServer, type TestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

type Client = ReturnType<typeof addressClient>;

/** Asserts the failure has `code`'s gRPC status and ErrorInfo, and returns it. */
function assertCode(error: ConnectError, code: ErrorCode, what = ""): ConnectError {
  assert.equal(errorInfo(error)?.reason, code, `${what}: ${error.message}`);
  assert.equal(errorInfo(error)?.domain, "books-and-addresses");
  assert.equal(error.code, GRPC_CODE_OF[code], what);
  assert.equal(error.metadata.get("error-code"), code, what);
  return error;
}

/** A request refused in both styles: the RPC call and the REST request that means the same. */
interface Refusal {
  what: string;
  rpc: (client: Client) => Promise<unknown>;
  rest: (base: string) => Promise<Response>;
  code: ErrorCode;
}

const LONG = "x".repeat(201);
const send = (base: string, method: string, path: string, body?: unknown, headers?: Fields) =>
  fetch(`${base}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : JSON_TYPE), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

const REFUSALS: Refusal[] = [
  {
    what: "create without fields (proto3: all empty)",
    rpc: (c) => c.createAddress({}),
    rest: (b) => send(b, "POST", "/addresses", {}),
    code: "invalid-field",
  },
  {
    what: "create with a bad postal code",
    rpc: (c) => c.createAddress({ address: { ...EXAMPLE_INPUT, postalCode: "W1 !" } }),
    rest: (b) => send(b, "POST", "/addresses", { ...EXAMPLE_INPUT, postalCode: "W1 !" }),
    code: "invalid-field",
  },
  {
    what: "create with a name too long and a blank city",
    rpc: (c) => c.createAddress({ address: { ...EXAMPLE_INPUT, name: LONG, city: " " } }),
    rest: (b) => send(b, "POST", "/addresses", { ...EXAMPLE_INPUT, name: LONG, city: " " }),
    code: "invalid-field",
  },
  {
    what: "create with a request id that has a space",
    rpc: (c) => c.createAddress({ address: EXAMPLE_INPUT, requestId: "a b" }),
    rest: (b) => send(b, "POST", "/addresses", EXAMPLE_INPUT, idempotencyKey("a b")),
    code: "invalid-parameter",
  },
  {
    what: "create with a request id of 256 characters",
    rpc: (c) => c.createAddress({ address: EXAMPLE_INPUT, requestId: "k".repeat(256) }),
    rest: (b) => send(b, "POST", "/addresses", EXAMPLE_INPUT, idempotencyKey("k".repeat(256))),
    code: "invalid-parameter",
  },
  ...[0n, -1n, 2n ** 53n].map((id): Refusal => ({
    what: `get id ${id}`,
    rpc: (c) => c.getAddress({ id }),
    rest: (b) => send(b, "GET", `/addresses/${id}`),
    code: "invalid-parameter",
  })),
  {
    what: "get an id nobody holds",
    rpc: (c) => c.getAddress({ id: 987654321n }),
    rest: (b) => send(b, "GET", "/addresses/987654321"),
    code: "address-not-found",
  },
  ...[501, -1].map((size): Refusal => ({
    what: `list ${size} a page`,
    rpc: (c) => c.listAddresses({ pageSize: size }),
    rest: (b) => send(b, "GET", `/addresses?limit=${size}`),
    code: "invalid-parameter",
  })),
  {
    what: "list after a token this server never issued",
    rpc: (c) => c.listAddresses({ pageToken: "bm9wZQ" }),
    rest: (b) => send(b, "GET", "/addresses?cursor=bm9wZQ"),
    code: "invalid-parameter",
  },
  {
    what: "replace with an etag over 1000 characters",
    rpc: (c) => c.replaceAddress({ id: 1n, address: EXAMPLE_INPUT, etag: "e".repeat(1001) }),
    rest: (b) => send(b, "PUT", "/addresses/1", EXAMPLE_INPUT, { "if-match": "e".repeat(1001) }),
    code: "invalid-parameter",
  },
  {
    what: "replace an id nobody holds, with an etag",
    rpc: (c) => c.replaceAddress({ id: 987654321n, address: EXAMPLE_INPUT, etag: '"x"' }),
    rest: (b) => send(b, "PUT", "/addresses/987654321", EXAMPLE_INPUT, { "if-match": '"x"' }),
    code: "precondition-failed",
  },
  {
    what: "update an id nobody holds",
    rpc: (c) => c.updateAddress({ id: 987654321n, address: { city: "Bonn" } }),
    rest: (b) =>
      send(b, "PATCH", "/addresses/987654321", { city: "Bonn" }, { "content-type": MERGE_PATCH }),
    code: "address-not-found",
  },
  {
    what: "delete an id nobody holds",
    rpc: (c) => c.deleteAddress({ id: 987654321n }),
    rest: (b) => send(b, "DELETE", "/addresses/987654321"),
    code: "address-not-found",
  },
];

async function stored(server: TestServer): Promise<number> {
  return (await addressBook(server.httpUrl).listAll()).length;
}

Deno.test("every bad request gets REST's code as its ErrorInfo reason, and stores nothing", async (t) => {
  const server = await startTestServer();
  const transports: [string, Transport][] = [
    ["gRPC", grpcTransport(server.grpcUrl!)],
    ["Connect JSON (HTTP port)", connectTransport(server.httpUrl, "1.1", { json: true })],
  ];
  try {
    await addressBook(server.httpUrl).create(EXAMPLE_INPUT);
    const before = await stored(server);
    for (const refusal of REFUSALS) {
      await t.step(refusal.what, async () => {
        const rest = await refusal.rest(server.httpUrl);
        assert.equal(await errorCode(rest), refusal.code, "REST");
        for (const [name, transport] of transports) {
          assertCode(await rpcFailure(refusal.rpc(addressClient(transport))), refusal.code, name);
        }
        assert.equal(await stored(server), before);
      });
    }

    await t.step("field problems name their fields in google.rpc.BadRequest", async () => {
      const error = await rpcFailure(
        addressClient(transports[0]![1]).createAddress({ address: { postalCode: "!" } }),
      );
      const rest = await (await send(server.httpUrl, "POST", "/addresses", { postalCode: "!" }))
        .json();
      const [violations] = error.findDetails(BadRequestSchema);
      assert.deepEqual(
        violations?.fieldViolations.map((v) => v.description),
        rest.errors.map((e: { detail: string }) => e.detail),
        "REST's details, in REST's order",
      );
      assert.deepEqual(
        violations?.fieldViolations.map((v) => v.field).sort(),
        [...REQUIRED_FIELD_NAMES.filter((f) => f !== "postalCode"), "postal_code"]
          .map((f) => `address.${f}`).sort(),
      );
      assert.equal(errorInfo(error)?.metadata.field, violations?.fieldViolations[0]?.field);
    });
  } finally {
    await server.close();
  }
});

Deno.test("preconditions, field masks and request ids", async (t) => {
  const server = await startTestServer();
  const client = addressClient(grpcTransport(server.grpcUrl!));
  const rest = addressBook(server.httpUrl);
  try {
    const address = await client.createAddress({ address: taggedInput("mask") });

    await t.step("a stale etag is ABORTED precondition-failed on every write", async () => {
      const changed = await client.updateAddress({ id: address.id, address: { city: "Bonn" } });
      const stale = address.etag;
      for (
        const call of [
          () => client.replaceAddress({ id: address.id, address: EXAMPLE_INPUT, etag: stale }),
          () => client.updateAddress({ id: address.id, address: { city: "Köln" }, etag: stale }),
          () => client.deleteAddress({ id: address.id, etag: stale }),
          () =>
            client.updateAddress({ id: address.id, address: { city: "Köln" }, etag: `W/${stale}` }),
        ]
      ) {
        assertCode(await rpcFailure(call()), "precondition-failed");
      }
      // REST's If-Match rules: a list, `*`.
      const listed = await client.updateAddress({
        id: address.id,
        address: { city: "Köln" },
        etag: `${stale}, ${changed.etag}`,
      });
      const any = await client.updateAddress({
        id: address.id,
        address: { city: "Ulm" },
        etag: "*",
      });
      assert.equal(any.city, "Ulm");
      assert.notEqual(any.etag, listed.etag);
    });

    await t.step("masks: unknown paths refused, output-only ones ignored", async () => {
      const current = await client.getAddress({ id: address.id });
      for (const paths of [["no_such_field"], ["*", "city"], ["postalCode"], ["address.city"]]) {
        const error = await rpcFailure(
          client.updateAddress({ id: address.id, address: { city: "X" }, updateMask: { paths } }),
        );
        assertCode(error, "invalid-parameter", paths.join());
        assert.equal(errorInfo(error)?.metadata.field, "update_mask");
      }
      const same = await client.updateAddress({
        id: address.id,
        // `address.etag` is a precondition (AIP-154), whatever the mask names: the current one.
        address: { id: 5n, etag: current.etag },
        updateMask: { paths: ["id", "etag"] },
      });
      assert.deepEqual(same, current, "nothing changed: not even the etag");
      // Clearing a required field: REST's `null` on it.
      const cleared = await rpcFailure(
        client.updateAddress({ id: address.id, address: {}, updateMask: { paths: ["city"] } }),
      );
      assertCode(cleared, "invalid-field");
      const restCleared = await rest.patch(Number(address.id), { city: null });
      assert.equal(await errorCode(restCleared), "invalid-field");
      assert.deepEqual(await client.getAddress({ id: address.id }), current);
    });

    await t.step("request_id is REST's Idempotency-Key, in the same store", async () => {
      const input = taggedInput("key");
      const first = await client.createAddress({ address: input, requestId: "shared-key" });
      const replayed = await rest.create(input, idempotencyKey("shared-key"));
      assert.equal(replayed.status, 201);
      assert.equal(replayed.headers.get("idempotent-replayed"), "true");
      assert.equal((await replayed.json()).id, Number(first.id));
      const reused = await rpcFailure(
        client.createAddress({ address: taggedInput("other"), requestId: "shared-key" }),
      );
      assertCode(reused, "idempotency-key-reused");
      const restReused = await rest.create(taggedInput("other"), idempotencyKey("shared-key"));
      assert.equal(await errorCode(restReused), "idempotency-key-reused");
    });

    await t.step(
      "concurrent creates with one request_id and other addresses store one",
      async () => {
        const before = await stored(server);
        const results = await Promise.allSettled(
          [1, 2, 3, 4].map((i) =>
            client.createAddress({ address: taggedInput(`race ${i}`), requestId: "race" })
          ),
        );
        const refused = results.flatMap((r) => r.status === "rejected" ? [r.reason] : []);
        assert.equal(results.length - refused.length, 1, "one creation");
        for (const error of refused) {
          const reason = errorInfo(error)?.reason;
          assert.ok(reason === "request-in-progress" || reason === "idempotency-key-reused");
          assertCode(error, reason);
        }
        assert.equal(await stored(server), before + 1);
      },
    );
  } finally {
    await server.close();
  }
});

const ALL = "addresses:read addresses:write";

Deno.test("the gate per call: tokens, scopes and ownership across styles", async (t) => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET });
  const [alice, bob, reader] = await Promise.all([
    hsToken({ sub: "alice", scope: ALL }),
    hsToken({ sub: "bob", scope: ALL }),
    hsToken({ sub: "reader", scope: "addresses:read" }),
  ]);
  const ports: [string, Transport][] = [
    ["gRPC port", grpcTransport(server.grpcUrl!)],
    ["HTTP port", connectTransport(server.httpUrl, "1.1")],
  ];
  try {
    await t.step("a method no service has: the refusal carries ErrorInfo too", async () => {
      const path = "/addresses.v1.AddressService/PurgeAll";
      using grpcJs = grpcJsClient(server.grpcUrl!, { service: [] });
      const answer = await new Promise<GrpcJsAnswer<unknown>>((resolve) =>
        grpcJs.makeUnaryRequest(
          path,
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.alloc(0),
          (e) => resolve({ code: e!.code, error: e, response: undefined, metadata: e!.metadata }),
        )
      );
      assert.equal(answer.code, Code.Unauthenticated);
      assert.equal(grpcJsErrorInfo(answer)?.reason, "unauthorized");
      using session = rawSession(server.grpcUrl!);
      const req = session.request({ ":method": "POST", ":path": path, ...JSON_TYPE });
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      // The refusal may end before its headers are awaited: its end is waited for from the start.
      const ended = new Promise((resolve) => req.on("end", resolve));
      const status = await new Promise((resolve) =>
        req.on("response", (h) => resolve(h[":status"]))
      );
      req.end("{}");
      await ended;
      const body = JSON.parse(Buffer.concat(chunks).toString());
      assert.equal(status, 401);
      assert.equal(body.code, "unauthenticated");
      assert.deepEqual(body.details.map((d: { type: string }) => d.type), ["google.rpc.ErrorInfo"]);
    });

    for (const [port, transport] of ports) {
      const client = addressClient(transport);
      const as = (token: string) => ({ headers: bearer(token) });
      await t.step(`${port}: no token, a read-only token`, async () => {
        assertCode(await rpcFailure(client.listAddresses({})), "unauthorized");
        const refused = await rpcFailure(
          client.createAddress({ address: EXAMPLE_INPUT }, as(reader)),
        );
        assertCode(refused, "forbidden");
        assert.match(refused.metadata.get("www-authenticate") ?? "", /addresses:write/);
        assert.deepEqual((await client.listAddresses({}, as(reader))).addresses, []);
      });

      await t.step(`${port}: Alice's address is not found by Bob, in any style`, async () => {
        const mine = await client.createAddress({ address: taggedInput(port) }, as(alice));
        const id = Number(mine.id);
        const bobRest = addressBook(server.httpUrl, bearer(bob));
        assert.equal((await bobRest.get(id)).status, 404);
        assert.equal((await bobRest.delete(id)).status, 404);
        for (
          const call of [
            () => client.getAddress({ id: mine.id }, as(bob)),
            () => client.updateAddress({ id: mine.id, address: { city: "Bonn" } }, as(bob)),
            () => client.deleteAddress({ id: mine.id }, as(bob)),
          ]
        ) {
          assertCode(await rpcFailure(call()), "address-not-found");
        }
        // Replacing another owner's id creates the caller's own address (version 1 PUT).
        const bobs = await client.replaceAddress({ id: mine.id, address: EXAMPLE_INPUT }, as(bob));
        assert.notEqual(bobs.id, mine.id);
        const listed = await client.listAddresses({}, as(bob));
        assert.ok(!listed.addresses.some((a) => a.id === mine.id));
        const aliceRest = await addressBook(server.httpUrl, bearer(alice)).get(id);
        assert.equal(aliceRest.status, 200);
        assert.equal(aliceRest.headers.get("etag"), mine.etag, "untouched");
      });
    }
  } finally {
    await server.close();
  }
});

Deno.test("the rate limit counts AddressService calls on each port", async () => {
  const server = await startTestServer({ RATE_LIMIT: "3/min" });
  try {
    for (
      const transport of [
        grpcTransport(server.grpcUrl!),
        connectTransport(server.httpUrl, "1.1", { json: true }),
      ]
    ) {
      const client = addressClient(transport);
      for (let i = 0; i < 3; i++) await client.listAddresses({});
      const refused = assertCode(await rpcFailure(client.listAddresses({})), "rate-limited");
      assert.ok(Number(refused.metadata.get("retry-after")) > 0);
      assert.equal(
        errorInfo(refused)?.metadata.retryAfterSeconds,
        refused.metadata.get("retry-after"),
      );
      // Refused before the store: nothing created.
      assertCode(
        await rpcFailure(client.createAddress({ address: EXAMPLE_INPUT })),
        "rate-limited",
      );
    }
  } finally {
    await server.close();
  }
  // HTTP and the gRPC child count apart (GRPC_ISOLATION=process): each port allowed three.
});
