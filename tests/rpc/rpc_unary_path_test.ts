/**
 * The lean unary path (rpc/unary/) against Connect's own handlers, side by side over sockets:
 * two servers on identical stores (copies of one KV, page-token key included, given the same
 * writes in the same order, so ids and page tokens agree), one with the lean path and one with every call through Connect, get the
 * same requests in the same order; every answer must be the same, byte for byte: status,
 * headers (but `date`), trailers and body, for successes and for every kind of failure, in
 * every framing on both ports. The `rpc` log lines must agree too.
 *
 * One thing differs between two stores by design: an address's etag is random per version
 * (lib/http/etag.ts), so a write on one side and the same write on the other get different
 * ones. Etags (22 base64url characters in quotes) are therefore compared by position and
 * length, not by value.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import http2 from "node:http2";
import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { OpenAPIHono } from "@hono/zod-openapi";
import { createLogger, type Logger } from "../../lib/log.ts";
import type { AppEnv } from "../../lib/http/hono_env.ts";
import { startGrpcListener } from "../../rpc/listener/grpc_listener.ts";
import { rpcRoutes } from "../../rpc/connect/http_routes.ts";
import { createBookStore } from "../../store/books.ts";
import { openAddressStore } from "../../store/addresses/repository.ts";
import { pageTokens } from "../../store/addresses/page_tokens.ts";
import { DEFAULT_BOOKS, readCatalogue } from "../../store/kv/open.ts";
import { ANONYMOUS } from "../../security/caller.ts";
import {
  CreateAddressRequestSchema,
  DeleteAddressRequestSchema,
  GetAddressRequestSchema,
  ListAddressesRequestSchema,
  UpdateAddressRequestSchema,
} from "../../rpc/gen/addresses/v1/addresses_pb.ts";
import { HealthCheckRequestSchema } from "../../rpc/gen/grpc/health/v1/health_pb.ts";
import { EXAMPLE_INPUT } from "../../lib/address.ts";

const S = "/addresses.v1.AddressService/";
const BOOKS = "/books.v1.BooksService/books";
const HEALTH = "/grpc.health.v1.Health/Check";

type Framing = "grpc" | "grpc-web" | "connect";
const TYPE: Record<Framing, string> = {
  "grpc": "application/grpc",
  "grpc-web": "application/grpc-web+proto",
  "connect": "application/proto",
};

function message<T extends DescMessage>(schema: T, init: MessageInitShape<T>): Uint8Array {
  return toBinary(schema, create(schema, init));
}

function framed(bytes: Uint8Array, flags = 0): Uint8Array {
  const out = new Uint8Array(5 + bytes.byteLength);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, bytes.byteLength);
  out.set(bytes, 5);
  return out;
}

/** One request of the sequence: a path, a message (framed per protocol unless `raw`), headers. */
interface Case {
  name: string;
  path: string;
  message?: Uint8Array;
  raw?: Uint8Array;
  headers?: Record<string, string>;
}

/** The requests both servers get, in this order (the writes change both stores alike). */
function cases(): Case[] {
  const get = (id: bigint) => message(GetAddressRequestSchema, { id });
  return [
    { name: "books", path: BOOKS, message: new Uint8Array() },
    {
      name: "books, compressed answer",
      path: BOOKS,
      message: new Uint8Array(),
      headers: { "grpc-accept-encoding": "gzip", "accept-encoding": "gzip" },
    },
    { name: "health check", path: HEALTH, message: message(HealthCheckRequestSchema, {}) },
    {
      name: "health check of an unknown service (a ConnectError)",
      path: HEALTH,
      message: message(HealthCheckRequestSchema, { service: "nope" }),
    },
    { name: "an address", path: S + "GetAddress", message: get(1n) },
    { name: "no such address", path: S + "GetAddress", message: get(999n) },
    { name: "id 0 (invalid-parameter)", path: S + "GetAddress", message: get(0n) },
    {
      name: "a page",
      path: S + "ListAddresses",
      message: message(ListAddressesRequestSchema, { pageSize: 2 }),
    },
    {
      name: "a page too large",
      path: S + "ListAddresses",
      message: message(ListAddressesRequestSchema, { pageSize: 501 }),
    },
    {
      name: "a creation",
      path: S + "CreateAddress",
      message: message(CreateAddressRequestSchema, { address: EXAMPLE_INPUT, requestId: "k-1" }),
    },
    {
      name: "the same creation replayed",
      path: S + "CreateAddress",
      message: message(CreateAddressRequestSchema, { address: EXAMPLE_INPUT, requestId: "k-1" }),
    },
    {
      name: "an empty address (invalid-field, BadRequest details)",
      path: S + "CreateAddress",
      message: message(CreateAddressRequestSchema, { address: {} }),
    },
    {
      name: "an update",
      path: S + "UpdateAddress",
      message: message(UpdateAddressRequestSchema, {
        id: 2n,
        address: { city: "Paris" },
        updateMask: { paths: ["city"] },
      }),
    },
    {
      name: "an update with a stale etag (precondition-failed)",
      path: S + "UpdateAddress",
      message: message(UpdateAddressRequestSchema, {
        id: 2n,
        etag: '"00000000000000010000"',
        address: { city: "Rome" },
        updateMask: { paths: ["city"] },
      }),
    },
    {
      name: "a deletion of nothing",
      path: S + "DeleteAddress",
      message: message(DeleteAddressRequestSchema, { id: 999n }),
    },
    { name: "bytes that are no message", path: S + "GetAddress", message: Uint8Array.of(255, 255) },
    { name: "unknown method", path: S + "Nope", message: get(1n) },
    { name: "a deadline of 1 ns", path: S + "GetAddress", message: get(1n), headers: t("1n") },
    { name: "a deadline of 5 s", path: S + "GetAddress", message: get(1n), headers: t("5S") },
    { name: "a malformed deadline", path: S + "GetAddress", message: get(1n), headers: t("soon") },
    {
      name: "a deadline past a timer's reach",
      path: S + "GetAddress",
      message: get(1n),
      headers: t("99999999H"),
    },
    {
      name: "an unknown request encoding",
      path: S + "GetAddress",
      message: get(1n),
      headers: { "grpc-encoding": "zstd", "content-encoding": "zstd" },
    },
  ];
}

/** A deadline, in both protocols' headers (each server reads its own). */
function t(grpc: string): Record<string, string> {
  const match = /^(\d+)([HMSmun])$/.exec(grpc);
  const ms = match
    ? Number(match[1]) *
      ({ H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 }[match[2]!] ?? 0)
    : NaN;
  return {
    "grpc-timeout": grpc,
    // Whole milliseconds down: 1 ns is 0 ms, passed at once on both sides (1 ms would race).
    "connect-timeout-ms": Number.isFinite(ms) ? String(Math.floor(ms)) : grpc,
  };
}

/** Framing-only cases: bodies no well-formed message is (gRPC and gRPC-Web). */
function envelopeCases(): Case[] {
  const get = message(GetAddressRequestSchema, { id: 1n });
  const two = new Uint8Array([...framed(get), ...framed(get)]);
  return [
    { name: "no message", path: S + "GetAddress", raw: new Uint8Array() },
    { name: "two messages", path: S + "GetAddress", raw: two },
    { name: "a compressed envelope, no encoding", path: S + "GetAddress", raw: framed(get, 1) },
    { name: "an incomplete envelope", path: S + "GetAddress", raw: framed(get).subarray(0, 6) },
    {
      name: "a message over the limit",
      path: S + "GetAddress",
      raw: framed(new Uint8Array(4 * 1024 * 1024 + 1)),
    },
  ];
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  trailers: Record<string, string>;
  body: string;
}

/** The body in hex, each etag's 22 random characters replaced by x's (see above). */
function hexWithoutStamps(bytes: Uint8Array): string {
  const text = Buffer.from(bytes).toString("latin1").replace(
    /"[A-Za-z0-9_-]{22}"/g,
    `"${"x".repeat(22)}"`,
  );
  return Buffer.from(text, "latin1").toString("hex");
}

function fields(headers: http2.IncomingHttpHeaders, drop: readonly string[]) {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(":") || drop.includes(name) || value === undefined) continue;
    out[name] = String(value);
  }
  return out;
}

function h2Call(
  session: http2.ClientHttp2Session,
  path: string,
  body: Uint8Array,
  headers: Record<string, string>,
): Promise<Answer> {
  const req = session.request({ ":method": "POST", ":path": path, te: "trailers", ...headers });
  let status = 0;
  let head: Record<string, string> = {};
  let trailers: Record<string, string> = {};
  const chunks: Buffer[] = [];
  req.on("response", (h) => {
    status = Number(h[":status"]);
    head = fields(h, ["date"]);
  });
  req.on("trailers", (h) => (trailers = fields(h, [])));
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  return new Promise((resolve, reject) => {
    req.on(
      "end",
      () =>
        resolve({ status, headers: head, trailers, body: hexWithoutStamps(Buffer.concat(chunks)) }),
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function fetchCall(
  base: string,
  path: string,
  body: Uint8Array,
  headers: Record<string, string>,
): Promise<Answer> {
  const response = await fetch(base + path, {
    method: "POST",
    headers,
    body: body as Uint8Array<ArrayBuffer>,
  });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const head: Record<string, string> = {};
  // A body of bytes has a length the stream Connect answers with does not; the bytes are compared.
  const drop = ["date", "content-length", "transfer-encoding"];
  response.headers.forEach((value, name) => {
    if (!drop.includes(name)) head[name] = value;
  });
  return {
    status: response.status,
    headers: head,
    trailers: {},
    body: hexWithoutStamps(bytes),
  };
}

function capture(): { logger: Logger; rpc: () => unknown[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: "info",
    write: (text) => {
      for (const line of text.split("\n")) if (line) lines.push(JSON.parse(line));
    },
  });
  return {
    logger,
    rpc: () => {
      logger.flush();
      return lines.filter((l) => l.msg === "rpc").map((l) => [l.procedure, l.code, l.requestId]);
    },
  };
}

/**
 * Stores over copies of one KV file holding three addresses and the page tokens' key, so that
 * the same writes give the same ids, and the same pages the same tokens, on both sides.
 */
async function storeCopies(): Promise<(() => Promise<Awaited<ReturnType<typeof open>>>)> {
  const dir = await Deno.makeTempDir();
  const seeded = `${dir}/seed.sqlite3`;
  {
    const kv = await Deno.openKv(seeded);
    const addresses = openAddressStore(kv);
    for (const city of ["Oslo", "Lima", "Accra"]) {
      await addresses.create(ANONYMOUS.owner, { ...EXAMPLE_INPUT, city });
    }
    // The KV's page-token key, made before the copies: both sides issue the same tokens.
    await pageTokens(kv).ready();
    kv.close();
  }
  let copies = 0;
  return async () => {
    const path = `${dir}/copy-${++copies}.sqlite3`;
    await Deno.copyFile(seeded, path);
    return await open(path);
  };
}

async function open(path: string) {
  const kv = await Deno.openKv(path);
  const books = createBookStore(await readCatalogue(DEFAULT_BOOKS));
  return { kv, books, addresses: openAddressStore(kv) };
}

function body(framing: Framing, c: Case): Uint8Array {
  if (c.raw) return c.raw;
  return framing === "connect" ? c.message! : framed(c.message!);
}

function requestHeaders(framing: Framing, c: Case, n: number): Record<string, string> {
  const own = Object.fromEntries(
    Object.entries(c.headers ?? {}).filter(([name]) =>
      framing === "connect"
        ? !name.startsWith("grpc-")
        : name !== "connect-timeout-ms" && name !== "content-encoding" &&
          name !== "accept-encoding"
    ),
  );
  return { "content-type": TYPE[framing], "x-request-id": `side-${n}`, ...own };
}

Deno.test("gRPC listener: the lean path answers every unary call exactly as Connect", async (t) => {
  const copy = await storeCopies();
  const sides = await Promise.all([true, false].map(async (lean) => {
    const { kv, books, addresses } = await copy();
    const log = capture();
    const listener = await startGrpcListener(
      { port: 0, host: "127.0.0.1" },
      { books, addresses, logger: log.logger, leanUnary: lean },
    );
    return { kv, listener, log, session: http2.connect(listener.url) };
  }));
  const [lean, connect] = sides as [typeof sides[0], typeof sides[0]];
  try {
    let n = 0;
    for (const framing of ["grpc", "grpc-web", "connect"] as const) {
      const all = framing === "connect" ? cases() : [...cases(), ...envelopeCases()];
      for (const c of all) {
        await t.step(`${framing}: ${c.name}`, async () => {
          const headers = requestHeaders(framing, c, ++n);
          const got = await h2Call(lean.session, c.path, body(framing, c), headers);
          const want = await h2Call(connect.session, c.path, body(framing, c), headers);
          assert.deepEqual(got, want);
        });
      }
    }
    await t.step("the same rpc log lines", () => {
      assert.deepEqual(lean.log.rpc(), connect.log.rpc());
    });
  } finally {
    for (const side of sides) {
      await new Promise<void>((resolve) => side.session.close(() => resolve()));
      await side.listener.shutdown();
      side.kv.close();
    }
  }
});

Deno.test("HTTP port: the lean path answers every unary call exactly as Connect", async (t) => {
  const copy = await storeCopies();
  const sides = await Promise.all([true, false].map(async (lean) => {
    const { kv, books, addresses } = await copy();
    const log = capture();
    const app = new OpenAPIHono<AppEnv>();
    app.use(async (c, next) => {
      c.set("requestId", c.req.header("x-request-id") ?? "none");
      c.set("caller", ANONYMOUS);
      await next();
    });
    rpcRoutes(app, { books, addresses, logger: log.logger, leanUnary: lean });
    const server = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen() {} },
      (request) => app.fetch(request),
    );
    return { kv, server, base: `http://127.0.0.1:${server.addr.port}` };
  }));
  const [lean, connect] = sides as [typeof sides[0], typeof sides[0]];
  try {
    let n = 0;
    for (const framing of ["grpc-web", "connect"] as const) {
      const all = framing === "connect" ? cases() : [...cases(), ...envelopeCases()];
      for (const c of all) {
        await t.step(`${framing}: ${c.name}`, async () => {
          const headers = requestHeaders(framing, c, ++n);
          const got = await fetchCall(lean.base, c.path, body(framing, c), headers);
          const want = await fetchCall(connect.base, c.path, body(framing, c), headers);
          assert.deepEqual(got, want);
        });
      }
    }
  } finally {
    for (const side of sides) {
      await side.server.shutdown();
      side.kv.close();
    }
  }
});
