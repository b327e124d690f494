// One request of the matrix sent the way its framing's client sends it (fetch over HTTP/1.1, or a
// unary call over node:http2), and what its answer means: the addresses it carries with their
// etags, whether a page has more, whether a delete was acknowledged. Every framing's answer is
// read by the project's own definitions (lib/address.ts, the GraphQL documents' root fields, the
// generated protobuf schemas and the server's own reading of an Address message), so the bench
// can compare answers across framings, and with the ceilings', before the load.
import http2 from "node:http2";
import { Buffer } from "node:buffer";
import { fromBinary, type Message } from "@bufbuild/protobuf";
import { type Address, addressAt } from "../../lib/address.ts";
import { addressInput } from "../../rpc/connect/address_requests.ts";
import {
  type Address as AddressMessage,
  AddressSchema,
} from "../../rpc/gen/addresses/v1/addresses_pb.ts";
import {
  framed,
  type Framing,
  graphqlRootOf,
  type MatrixRequest,
  type Operation,
  rpcMethodOf,
  type Wire,
} from "./requests.ts";

/** An answer: HTTP status and headers, and the body (for gRPC and gRPC-Web: the message). */
export interface Answer {
  status: number;
  headers: Headers;
  body: Uint8Array;
  /** gRPC and gRPC-Web: the call's status (0: OK). */
  grpcStatus?: number;
  /** gRPC-Web: the trailer frame, as sent. */
  trailer?: Uint8Array;
  /** What a response of the load must measure: the HTTP body, or the gRPC message. */
  size: number;
}

/** Sends one request to `base` (the HTTP port's URL, or the gRPC listener's for gRPC). */
export async function send(base: string, wire: Wire, request: MatrixRequest): Promise<Answer> {
  if (wire.grpc) return await grpcUnary(base, request.path, request.body ?? new Uint8Array(0));
  const res = await fetch(`${base}${request.path}`, {
    method: request.method,
    ...(request.body ? { body: request.body } : {}),
    headers: {
      ...(request.body ? { "content-type": wire.contentType } : {}),
      ...wire.headers,
      // As wrk sends none: the samples are answered as the load's requests are.
      "accept-encoding": "identity",
    },
  });
  const body = new Uint8Array(await res.arrayBuffer());
  if (wire.contentType.startsWith("application/grpc-web") && res.status === 200) {
    const { message, trailer, grpcStatus } = grpcWebFrames(body);
    return {
      status: res.status,
      headers: res.headers,
      body: message,
      grpcStatus,
      trailer,
      size: body.byteLength,
    };
  }
  return { status: res.status, headers: res.headers, body, size: body.byteLength };
}

/** The message and trailer frame of a gRPC-Web body, and the status the trailer carries. */
function grpcWebFrames(body: Uint8Array) {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  let message: Uint8Array = new Uint8Array(0);
  let trailer: Uint8Array = new Uint8Array(0);
  let grpcStatus = NaN;
  for (let at = 0; at + 5 <= body.byteLength;) {
    const length = view.getUint32(at + 1);
    const frame = body.subarray(at, at + 5 + length);
    if (body[at]! & 0x80) {
      trailer = frame;
      const text = new TextDecoder().decode(frame.subarray(5));
      grpcStatus = Number(/grpc-status:\s*(\d+)/i.exec(text)?.[1] ?? NaN);
    } else message = frame.subarray(5);
    at += 5 + length;
  }
  return { message, trailer, grpcStatus };
}

/** One unary gRPC call over HTTP/2 cleartext; the answer's message unframed, and its status. */
function grpcUnary(base: string, path: string, message: Uint8Array): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(base);
    session.on("error", reject);
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      "te": "trailers",
    });
    const chunks: Buffer[] = [];
    let status = 0;
    let grpcStatus = NaN;
    const headers = new Headers();
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      for (const [k, v] of Object.entries(h)) if (!k.startsWith(":")) headers.set(k, String(v));
      if (h["grpc-status"] !== undefined) grpcStatus = Number(h["grpc-status"]);
    });
    stream.on("trailers", (t) => (grpcStatus = Number(t["grpc-status"])));
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", reject);
    stream.on("end", () => {
      session.close();
      const data = Buffer.concat(chunks);
      const body = data.byteLength >= 5 ? data.subarray(5, 5 + data.readUInt32BE(1)) : data;
      resolve({ status, headers, body: new Uint8Array(body), grpcStatus, size: body.byteLength });
    });
    stream.end(Buffer.from(framed(message)));
  });
}

/** An address an answer carries, with the etag it says it has. */
export type Carried = Address & { etag: string | undefined };

/** What an answer says. */
export interface Meaning {
  addresses: Carried[];
  /** A page: whether another follows. */
  more?: boolean;
  /** A delete: acknowledged. */
  deleted?: boolean;
}

// deno-lint-ignore no-explicit-any
type Json = any;

/** The address object in a GraphQL result: the value itself, or a payload's one member. */
function addressIn(value: Json): Json {
  if (value === null || typeof value !== "object" || "id" in value) return value;
  return Object.values(value).find((v: Json) => v !== null && typeof v === "object" && "id" in v);
}

function fromNode(node: Json): Carried {
  return { ...addressAt(Number(node.id), node), etag: node.etag ?? undefined };
}

function fromMessage(m: AddressMessage): Carried {
  return { ...addressAt(Number(m.id), addressInput(m)), etag: m.etag || undefined };
}

/** The Address messages in a decoded answer: itself, or its fields' (a page's list). */
function messagesIn(decoded: Message): AddressMessage[] {
  if (decoded.$typeName === AddressSchema.typeName) return [decoded as AddressMessage];
  const found: AddressMessage[] = [];
  for (const value of Object.values(decoded as Record<string, unknown>)) {
    for (const v of Array.isArray(value) ? value : [value]) {
      if ((v as Message | undefined)?.$typeName === AddressSchema.typeName) found.push(v);
    }
  }
  return found;
}

/**
 * What the answer of `op` in `framing` says; throws when it is an error (a status other than
 * 2xx, a GraphQL error, a gRPC status other than OK).
 */
export function meaningOf(op: Operation, framing: Framing, answer: Answer): Meaning {
  const text = () => new TextDecoder().decode(answer.body);
  if (answer.status < 200 || answer.status > 299) {
    throw new Error(`${framing} ${op} answered ${answer.status}: ${text().slice(0, 300)}`);
  }
  if (answer.grpcStatus !== undefined && answer.grpcStatus !== 0) {
    throw new Error(`${framing} ${op} answered grpc-status ${answer.grpcStatus}`);
  }
  switch (framing) {
    case "REST": {
      if (op === "delete") return { addresses: [], deleted: answer.status === 204 };
      const value = JSON.parse(text());
      if (op === "page") {
        return {
          addresses: value.addresses.map((a: Json) => ({ ...fromNode(a), etag: undefined })),
          more: value.nextCursor !== null && value.nextCursor !== undefined,
        };
      }
      return { addresses: [{ ...fromNode(value), etag: answer.headers.get("etag") ?? undefined }] };
    }
    case "GraphQL": {
      const { data, errors } = JSON.parse(text()) as { data: Json; errors?: unknown };
      if (errors !== undefined) throw new Error(`GraphQL ${op} answered errors: ${text()}`);
      const root = data?.[graphqlRootOf(op)];
      if (op === "delete") return { addresses: [], deleted: root !== null && root !== false };
      if (op === "page") {
        return {
          addresses: root.edges.map((e: Json) => fromNode(e.node)),
          more: root.pageInfo.hasNextPage,
        };
      }
      const address = addressIn(root);
      return { addresses: address ? [fromNode(address)] : [] };
    }
    default: {
      const decoded = fromBinary(rpcMethodOf(op).output, answer.body) as Message & {
        nextPageToken?: string;
      };
      if (op === "delete") return { addresses: [], deleted: true };
      return {
        addresses: messagesIn(decoded).map(fromMessage),
        ...(decoded.nextPageToken !== undefined ? { more: decoded.nextPageToken !== "" } : {}),
      };
    }
  }
}
