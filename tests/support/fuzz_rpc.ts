/**
 * Generators of RPC requests for the fuzz suite: Connect, gRPC-Web and native gRPC bodies
 * (envelopes with random flags, declared lengths, truncation, the compressed flag without an
 * encoding, oversize lengths; random and near-valid protobuf bytes) and headers (timeouts,
 * encodings, content types).
 */
import fc from "fast-check";
import { headerText } from "./fuzz.ts";

/** Which wire protocol a case speaks (decides the content types and the framing). */
export type RpcProtocol = "connect" | "grpc-web" | "grpc";

/** One RPC request. */
export interface RpcCase {
  protocol: RpcProtocol;
  method: "POST" | "GET";
  path: string;
  headers: Record<string, string>;
  body: Uint8Array<ArrayBuffer>;
}

function varint(value: number): number[] {
  const out: number[] = [];
  let v = value >>> 0;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
}

/** Protobuf bytes: empty (a valid BooksRequest), fields of every wire type, garbage. */
const protobufBytes: fc.Arbitrary<number[]> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<number[]>([]) },
  {
    weight: 3,
    // A health check request (field 1, string) with a random service name.
    arbitrary: fc.string({ maxLength: 30 }).map((s) => {
      const bytes = [...new TextEncoder().encode(s)];
      return [0x0a, ...varint(bytes.length), ...bytes];
    }),
  },
  {
    weight: 3,
    arbitrary: fc.array(
      fc.tuple(fc.integer({ min: 0, max: 600 }), fc.integer({ min: 0, max: 7 }), fc.nat(300)),
      { maxLength: 4 },
    ).map((fields) =>
      fields.flatMap(([field, wire, value]) => {
        const tag = varint(field * 8 + wire);
        switch (wire) {
          case 0:
            return [...tag, ...varint(value)];
          case 1:
            return [...tag, 1, 2, 3, 4, 5, 6, 7, 8];
          case 2:
            return [...tag, ...varint(value), ...new Array(Math.min(value, 20)).fill(0x41)];
          case 5:
            return [...tag, 1, 2, 3, 4];
          default:
            return tag;
        }
      })
    ),
  },
  { weight: 2, arbitrary: fc.array(fc.nat(255), { maxLength: 64 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<number[]>([0xff, 0xff, 0xff, 0xff, 0xff, 0x0f], [0x0a, 0xff], [
      0x08,
    ]),
  },
);

/**
 * JSON that proto3 JSON refuses in its own ways: syntax, a value of the wrong type, a field mask
 * path that is not lowerCamelCase or does not convert back, an unknown key, a duplicate key.
 */
const protoJsonText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom("{}", "", "null", "[]", '{"service":1}', '{"unknown":true}', "{", '"x"'),
  fc.constantFrom(
    "postal_code",
    "postalCode",
    "Name",
    "a..b",
    "name,city",
    "name,,city",
    "*",
    "address.name",
    "_x",
  ).map((mask) => JSON.stringify({ address: { id: "1", name: "x" }, updateMask: mask })),
  fc.constantFrom(
    '{"pageSize":"x"}',
    '{"pageSize":1.5}',
    '{"address":{"name":5}}',
    '{"address":[]}',
    '{"id":"-1"}',
    '{"id":"x"}',
    '{"address":{},"address":{}}',
    '{"updateMask":5}',
  ),
  fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v) ?? ""),
);

/** One envelope: flags, a declared length that may lie, and a payload. */
const envelope = fc.record({
  flags: fc.oneof(
    { weight: 6, arbitrary: fc.constant(0) },
    { weight: 2, arbitrary: fc.constant(1) },
    { weight: 1, arbitrary: fc.constantFrom(2, 0x80, 0x81, 0xff) },
  ),
  lie: fc.oneof(
    { weight: 6, arbitrary: fc.constant(0) },
    { weight: 1, arbitrary: fc.integer({ min: -10, max: 10 }) },
    { weight: 1, arbitrary: fc.constantFrom(0x7fffffff, 5 * 1024 * 1024, 0xffffffff) },
  ),
  // JSON too: the payload of `application/grpc+json` and `application/grpc-web+json`.
  payload: fc.oneof(
    { weight: 4, arbitrary: protobufBytes },
    { weight: 1, arbitrary: protoJsonText.map((s) => [...new TextEncoder().encode(s)]) },
  ),
});

/** Enveloped bodies (gRPC, gRPC-Web, Connect streaming), perhaps truncated. */
const envelopedBody: fc.Arbitrary<Uint8Array<ArrayBuffer>> = fc.tuple(
  fc.array(envelope, { minLength: 0, maxLength: 3 }),
  fc.oneof(
    { weight: 5, arbitrary: fc.constant(Infinity) },
    { weight: 1, arbitrary: fc.nat(12) },
  ),
).map(([envelopes, cut]) => {
  const bytes: number[] = [];
  for (const e of envelopes) {
    const length = Math.max(0, Math.min(0xffffffff, e.payload.length + e.lie));
    bytes.push(
      e.flags,
      (length >>> 24) & 255,
      (length >>> 16) & 255,
      (length >>> 8) & 255,
      length & 255,
    );
    bytes.push(...e.payload);
  }
  return new Uint8Array(bytes.slice(0, cut));
});

/** Bodies of Connect unary calls: protobuf bytes, JSON values, garbage. */
const connectBody: fc.Arbitrary<Uint8Array<ArrayBuffer>> = fc.oneof(
  protobufBytes.map((b) => new Uint8Array(b)),
  protoJsonText.map((s) => new TextEncoder().encode(s)),
);

const PATHS = fc.constantFrom(
  "/books.v1.BooksService/books",
  "/books.v1.BooksService/books",
  "/books.v1.BooksService/books",
  "/addresses.v1.AddressService/UpdateAddress",
  "/addresses.v1.AddressService/ListAddresses",
  "/grpc.health.v1.Health/Check",
  "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
  "/books.v1.BooksService/Books",
  "/books.v1.BooksService/unknown",
  "/nope.Service/method",
  "/books.v1.BooksService/books/",
);

const timeouts = fc.record({
  "grpc-timeout": fc.constantFrom(
    "1n",
    "1u",
    "1m",
    "5S",
    "1H",
    "0S",
    "99999999H",
    "abc",
    "1",
    "-1S",
    "",
  ),
  "connect-timeout-ms": fc.constantFrom("0", "1", "5000", "-1", "abc", "99999999999", "1.5", ""),
}, { requiredKeys: [] });

const encodings = fc.record({
  "grpc-encoding": fc.constantFrom("gzip", "br", "identity", "deflate", "snappy", "GZIP", ""),
  "grpc-accept-encoding": fc.constantFrom("gzip", "br", "identity", "x", ""),
  "content-encoding": fc.constantFrom("gzip", "br", "identity", "x"),
  "connect-content-encoding": fc.constantFrom("gzip", "br", "identity", "x"),
  "accept-encoding": fc.constantFrom("gzip", "br", "identity", "*"),
  "connect-accept-encoding": fc.constantFrom("gzip", "identity"),
}, { requiredKeys: [] });

const extra = fc.record({
  "connect-protocol-version": fc.constantFrom("1", "2", "", "abc"),
  "x-request-id": fc.oneof(fc.uuid().map(String), headerText(60)),
  "x-grpc-web": fc.constantFrom("1", ""),
  "x-user-agent": headerText(30),
}, { requiredKeys: [] });

const contentTypes: Record<RpcProtocol, fc.Arbitrary<string>> = {
  "connect": fc.constantFrom(
    "application/proto",
    "application/json",
    "application/json; charset=utf-8",
    "application/connect+proto",
    "application/connect+json",
    "APPLICATION/PROTO",
    "application/proto; charset=latin1",
    "application/protobuf",
    "text/plain",
  ),
  "grpc-web": fc.constantFrom(
    "application/grpc-web",
    "application/grpc-web+proto",
    "application/grpc-web+json",
    "application/grpc-web-text",
    "application/grpc-web-text+proto",
    "application/grpc-web+thrift",
  ),
  "grpc": fc.constantFrom(
    "application/grpc",
    "application/grpc+proto",
    "application/grpc+json",
    "application/grpc; x=y",
    "application/grpc+thrift",
    "application/grpcx",
  ),
};

/** A Connect GET: the message in the query (`encoding`, `message`, `base64`, `compression`). */
const connectGetQuery = fc.record({
  encoding: fc.constantFrom("proto", "json", "xml", ""),
  message: fc.oneof(
    fc.constantFrom("", "%7B%7D", "e30", "AA", "%ZZ", "!!!"),
    protobufBytes.map((b) => btoa(String.fromCharCode(...b)).replace(/=+$/, "")),
  ),
  base64: fc.constantFrom("1", "0", "true"),
  compression: fc.constantFrom("gzip", "br", "identity", "x"),
  connect: fc.constantFrom("v1", "v2"),
}, { requiredKeys: [] }).map((q) =>
  Object.keys(q).length === 0 ? "" : "?" + Object.entries(q).map(([k, v]) => `${k}=${v}`).join("&")
);

/**
 * An RPC case of `protocol`, to one of `paths` (by default the application's, health,
 * reflection and near-misses).
 */
export function rpcCase(
  protocol: RpcProtocol,
  paths: fc.Arbitrary<string> = PATHS,
): fc.Arbitrary<RpcCase> {
  const body = protocol === "connect"
    ? fc.oneof({ weight: 3, arbitrary: connectBody }, { weight: 1, arbitrary: envelopedBody })
    : envelopedBody;
  return fc.record({
    path: paths,
    get: protocol === "connect" ? fc.boolean() : fc.constant(false),
    query: connectGetQuery,
    type: contentTypes[protocol],
    timeouts,
    encodings,
    extra,
    body,
  }).map(({ path, get, query, type, timeouts, encodings, extra, body }) => {
    const headers: Record<string, string> = { ...timeouts, ...encodings, ...extra };
    if (get) {
      return { protocol, method: "GET", path: path + query, headers, body: new Uint8Array() };
    }
    headers["content-type"] = type;
    return { protocol, method: "POST", path, headers, body };
  });
}
