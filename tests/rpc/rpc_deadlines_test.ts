/**
 * Deadlines over sockets (issue 35): a call whose deadline has passed starts no write and is
 * DEADLINE_EXCEEDED with ErrorInfo `deadline-exceeded`, on the gRPC listener (gRPC,
 * `grpc-timeout: 1n`, raw node:http2) and on the HTTP port (Connect binary and JSON,
 * `connect-timeout-ms`; gRPC-Web); the store asks again right before its commit, so a deadline
 * that passes while the write waits for its reads stores nothing; and a write that committed as
 * its deadline passed stands, is answered when the answer can still be sent, and a retry with
 * the same `request_id` replays it. Each time the book is listed afterwards.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import { errorFromJsonBytes } from "@connectrpc/connect/protocol-connect";
import { EXAMPLE_INPUT } from "../../lib/address.ts";
import { CreateAddressRequestSchema } from "../../rpc/gen/addresses/v1/addresses_pb.ts";
import { errorInfo, grpcWebTrailer, rawSession } from "../support/rpc_clients.ts";
import { h2Post } from "../support/raw_http.ts";
import { addressBook } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";

const CREATE = "/addresses.v1.AddressService/CreateAddress";

function createRequest(requestId = ""): Uint8Array<ArrayBuffer> {
  return new Uint8Array(toBinary(
    CreateAddressRequestSchema,
    create(CreateAddressRequestSchema, { address: EXAMPLE_INPUT, requestId }),
  ));
}

function framed(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(5 + bytes.byteLength);
  new DataView(out.buffer).setUint32(1, bytes.byteLength);
  out.set(bytes, 5);
  return out;
}

/** How many addresses the (anonymous) book holds, over REST. */
function stored(base: string): Promise<number> {
  return addressBook(base).listAll().then((all) => all.length);
}

function assertDeadlineExceeded(error: ConnectError | undefined, what: string): void {
  assert.equal(error?.code, Code.DeadlineExceeded, what);
  assert.equal(errorInfo(error!)?.reason, "deadline-exceeded", what);
}

/** A Connect unary answer's error (its JSON body). */
async function connectError(res: Response): Promise<ConnectError> {
  return errorFromJsonBytes(
    new Uint8Array(await res.arrayBuffer()),
    undefined,
    new ConnectError("no error body", Code.Unknown),
  );
}

Deno.test("a call whose deadline has passed writes nothing: DEADLINE_EXCEEDED in every protocol", async () => {
  const server = await startTestServer();
  try {
    const base = server.httpUrl;
    // gRPC on the gRPC listener, 1 ns (a deadline under 1 ms has passed when the call starts).
    using session = rawSession(server.grpcUrl!);
    const grpc = await h2Post(session, CREATE, {
      "content-type": "application/grpc",
      "grpc-timeout": "1n",
    }, framed(createRequest()));
    assert.equal(grpc.status, 200);
    assertDeadlineExceeded(findTrailerError(grpc.fields), "gRPC, 1n");

    // Connect binary (the lean path) and Connect JSON (Connect's own handler), 0 ms.
    const connect = await fetch(`${base}${CREATE}`, {
      method: "POST",
      headers: { "content-type": "application/proto", "connect-timeout-ms": "0" },
      body: createRequest(),
    });
    assert.equal(connect.status, 504);
    assertDeadlineExceeded(await connectError(connect), "Connect, 0 ms");
    const json = await fetch(`${base}${CREATE}`, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-timeout-ms": "0" },
      body: JSON.stringify({ address: EXAMPLE_INPUT }),
    });
    assert.equal(json.status, 504);
    assertDeadlineExceeded(await connectError(json), "Connect JSON, 0 ms");

    // gRPC-Web on the HTTP port, 1 ns.
    const web = await fetch(`${base}${CREATE}`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", "grpc-timeout": "1n" },
      body: framed(createRequest()),
    });
    assert.equal(web.status, 200);
    const trailer = grpcWebTrailer(
      "application/grpc-web+proto",
      new Uint8Array(await web.arrayBuffer()),
    );
    assertDeadlineExceeded(findTrailerError(trailer!), "gRPC-Web, 1n");

    assert.equal(await stored(base), 0, "nothing was stored");
    // The same call with time enough is stored.
    const ok = await h2Post(session, CREATE, {
      "content-type": "application/grpc",
      "grpc-timeout": "5S",
    }, framed(createRequest()));
    assert.equal(ok.fields.get("grpc-status"), "0");
    assert.equal(await stored(base), 1);
  } finally {
    await server.close();
  }
});

/**
 * A KV whose reads take `delay.reads` ms and whose commits take `delay.commits` ms longer (0:
 * none), for a deadline that passes while a write waits.
 */
function slowKv(kv: Deno.Kv, delay: { reads: number; commits: number }): Deno.Kv {
  const sleep = (ms: number) => ms > 0 ? new Promise((r) => setTimeout(r, ms)) : undefined;
  return new Proxy(kv, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (typeof value !== "function") return value;
      if (name === "get" || name === "getMany") {
        return async (...args: unknown[]) => {
          await sleep(delay.reads);
          return await value.apply(target, args);
        };
      }
      if (name === "atomic") {
        return () => {
          const op = target.atomic();
          const slow: Deno.AtomicOperation = new Proxy(op, {
            get(o, n) {
              if (n === "commit") {
                return async () => {
                  await sleep(delay.commits);
                  return await o.commit();
                };
              }
              const v = Reflect.get(o, n, o);
              return typeof v === "function"
                ? (...args: unknown[]) => (v.apply(o, args) === o ? slow : v.apply(o, args))
                : v;
            },
          });
          return slow;
        };
      }
      return value.bind(target);
    },
  });
}

Deno.test("a deadline that passes before the commit stores nothing; one that passes during it stands and replays", async () => {
  const delay = { reads: 0, commits: 0 };
  // Inline: the gRPC listener on the same (slow) KV handle as the HTTP port.
  const server = await startTestServer(
    { GRPC_ISOLATION: "inline" },
    { wrapKv: (kv) => slowKv(kv, delay) },
  );
  try {
    const base = server.httpUrl;
    using session = rawSession(server.grpcUrl!);
    // The keyed create reads its request_id's record first (50 ms here); a 1 ms deadline passes
    // meanwhile, and the store's check before the commit refuses it.
    delay.reads = 50;
    const grpc = await h2Post(session, CREATE, {
      "content-type": "application/grpc",
      "grpc-timeout": "1m",
    }, framed(createRequest("slow-grpc")));
    assertDeadlineExceeded(findTrailerError(grpc.fields), "gRPC, 1 ms");
    const connect = await fetch(`${base}${CREATE}`, {
      method: "POST",
      headers: { "content-type": "application/proto", "connect-timeout-ms": "1" },
      body: createRequest("slow-connect"),
    });
    assert.equal(connect.status, 504);
    assertDeadlineExceeded(await connectError(connect), "Connect, 1 ms");
    delay.reads = 0;
    assert.equal(await stored(base), 0, "nothing was stored");

    // The commit itself outlasts the deadline: checked before, it commits; the answer is sent
    // (this client still reads it), and a retry with the same request_id replays that address.
    delay.commits = 150;
    const raced = await fetch(`${base}${CREATE}`, {
      method: "POST",
      headers: { "content-type": "application/proto", "connect-timeout-ms": "50" },
      body: createRequest("raced"),
    });
    delay.commits = 0;
    assert.equal(raced.status, 200);
    const first = Buffer.from(await raced.arrayBuffer());
    assert.equal(await stored(base), 1);
    const retry = await fetch(`${base}${CREATE}`, {
      method: "POST",
      headers: { "content-type": "application/proto", "connect-timeout-ms": "5000" },
      body: createRequest("raced"),
    });
    assert.equal(retry.status, 200);
    assert.equal(retry.headers.get("idempotent-replayed"), "true");
    assert.deepEqual(Buffer.from(await retry.arrayBuffer()), first);
    assert.equal(await stored(base), 1, "the retry replayed");
  } finally {
    await server.close();
  }
});
