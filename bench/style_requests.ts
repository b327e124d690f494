// What the "which style" rows send (bench/styles.ts): one operation of the address book, create,
// read by id or a page of 50, as each style's client sends it: REST as the OpenAPI document
// describes it, GraphQL as the typed documents (clients/gen/graphql.ts), Connect as binary
// protobuf over HTTP/1.1, gRPC as one framed message over HTTP/2; and what each answer means, so
// every style's answer can be checked against REST's before the load.
import {
  create,
  type DescMessage,
  fromBinary,
  type MessageInitShape,
  toBinary,
} from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { print } from "graphql";
import {
  AddressDocument,
  AddressesDocument,
  CreateAddressDocument,
} from "../clients/gen/graphql.ts";
import {
  type Address as AddressMessage,
  AddressSchema,
  AddressService,
  CreateAddressRequestSchema,
  GetAddressRequestSchema,
  ListAddressesRequestSchema,
  ListAddressesResponseSchema,
} from "../rpc/gen/addresses/v1/addresses_pb.ts";
import { type Address, addressAt } from "../lib/address.ts";
import { addressInput } from "../rpc/connect/address_requests.ts";
import { ADDRESS_INPUT } from "./addresses_contenders.ts";

export type Style = "REST" | "GraphQL" | "gRPC" | "Connect";
export type Operation = "create" | "get" | "page-50";

/** The styles in the order of the table. */
export const STYLES: readonly Style[] = ["REST", "GraphQL", "gRPC", "Connect"];

/** Addresses seeded for the reads; the one read by id; the page size. */
export const SEEDED_FOR_STYLES = 1_000;
export const READ_ID = 500;
const PAGE = 50;

/** One request: over HTTP/1.1 (wrk) or one gRPC call (h2load), with its expected status. */
export interface StyleRequest {
  method: "GET" | "POST";
  path: string;
  /** Body bytes; for gRPC the protobuf message (framed by the caller). */
  body?: Uint8Array<ArrayBuffer>;
  contentType?: string;
  status: number;
}

const SERVICE = "/addresses.v1.AddressService";
const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

function encoded<T extends DescMessage>(
  schema: T,
  init: MessageInitShape<T>,
): Uint8Array<ArrayBuffer> {
  return new Uint8Array(toBinary(schema, create(schema, init)));
}

function rpcMessage(op: Operation): { method: string; message: Uint8Array<ArrayBuffer> } {
  switch (op) {
    case "create":
      return {
        method: "CreateAddress",
        message: encoded(CreateAddressRequestSchema, { address: ADDRESS_INPUT }),
      };
    case "get":
      return {
        method: "GetAddress",
        message: encoded(GetAddressRequestSchema, { id: BigInt(READ_ID) }),
      };
    case "page-50":
      return {
        method: "ListAddresses",
        message: encoded(ListAddressesRequestSchema, { pageSize: PAGE }),
      };
  }
}

function graphqlBody(op: Operation): Uint8Array<ArrayBuffer> {
  switch (op) {
    case "create":
      return json({ query: print(CreateAddressDocument), variables: { input: ADDRESS_INPUT } });
    case "get":
      return json({ query: print(AddressDocument), variables: { id: String(READ_ID) } });
    case "page-50":
      return json({ query: print(AddressesDocument), variables: { first: PAGE } });
  }
}

/** The request `style` sends for `op`. */
export function styleRequest(op: Operation, style: Style): StyleRequest {
  switch (style) {
    case "REST":
      if (op === "create") {
        return { method: "POST", path: "/addresses", body: json(ADDRESS_INPUT), status: 201 };
      }
      return {
        method: "GET",
        path: op === "get" ? `/addresses/${READ_ID}` : `/addresses?limit=${PAGE}`,
        status: 200,
      };
    case "GraphQL":
      return { method: "POST", path: "/graphql", body: graphqlBody(op), status: 200 };
    case "Connect":
    case "gRPC": {
      const { method, message } = rpcMessage(op);
      return {
        method: "POST",
        path: `${SERVICE}/${method}`,
        body: message,
        contentType: style === "gRPC" ? "application/grpc" : "application/proto",
        status: 200,
      };
    }
  }
}

/** A gRPC message in its 5-byte frame (uncompressed). */
export function framed(message: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(5 + message.byteLength);
  new DataView(out.buffer).setUint32(1, message.byteLength);
  out.set(message, 5);
  return out;
}

/** What an answer says: its addresses (with etags where the style answers them), next page. */
export interface Meaning {
  addresses: (Address & { etag?: string })[];
  next?: string | null;
}

// The server's own reading of a message (its fields come from lib/address.ts's table).
function fromMessage(a: AddressMessage): Meaning["addresses"][number] {
  return { ...addressAt(Number(a.id), addressInput(a)), etag: a.etag };
}

/** What a protobuf answer (Connect's body, gRPC's message) of `op` says. */
export function protoMeaning(op: Operation, bytes: Uint8Array): Meaning {
  if (op === "page-50") {
    const page = fromBinary(ListAddressesResponseSchema, bytes);
    return {
      addresses: page.addresses.map(fromMessage),
      next: page.nextPageToken === "" ? null : page.nextPageToken,
    };
  }
  return { addresses: [fromMessage(fromBinary(AddressSchema, bytes))] };
}

/** What a GraphQL answer of `op` says. */
export function graphqlMeaning(op: Operation, text: string): Meaning {
  // deno-lint-ignore no-explicit-any
  const { data, errors } = JSON.parse(text) as { data: any; errors?: unknown };
  if (errors !== undefined || data === null) throw new Error(`GraphQL errors: ${text}`);
  // deno-lint-ignore no-explicit-any
  const node = (n: any) => ({ ...n, id: Number(n.id) });
  if (op === "page-50") {
    const { edges, pageInfo } = data.addresses;
    return {
      // deno-lint-ignore no-explicit-any
      addresses: edges.map((e: any) => node(e.node)),
      next: pageInfo.hasNextPage ? pageInfo.endCursor : null,
    };
  }
  return { addresses: [node(op === "get" ? data.address : data.createAddress)] };
}

/**
 * What a REST answer (its body and ETag) says; a page's addresses with the ETag each has when
 * read by id (a page carries none).
 */
export async function restMeaning(
  base: string,
  op: Operation,
  body: Uint8Array,
  etag: string | null,
): Promise<Meaning> {
  const value = JSON.parse(new TextDecoder().decode(body));
  if (op === "page-50") {
    const addresses = [];
    for (const a of value.addresses as Meaning["addresses"]) {
      const one = await fetch(`${base}/addresses/${a.id}`);
      await one.body?.cancel();
      addresses.push({ ...a, etag: one.headers.get("etag") ?? "(no ETag)" });
    }
    return { addresses, next: value.nextCursor };
  }
  return { addresses: [{ ...value, etag: etag ?? "(no ETag)" }] };
}

/** One real gRPC call of `op` (Connect-ES over node:http2), closed before the server stops. */
export async function grpcCall(grpcUrl: string, op: Operation): Promise<Uint8Array> {
  const session = new Http2SessionManager(grpcUrl);
  try {
    const client = createClient(
      AddressService,
      createGrpcTransport({ baseUrl: grpcUrl, sessionManager: session }),
    );
    const answer = op === "create"
      ? await client.createAddress({ address: ADDRESS_INPUT })
      : op === "get"
      ? await client.getAddress({ id: BigInt(READ_ID) })
      : await client.listAddresses({ pageSize: PAGE });
    return op === "page-50"
      ? toBinary(ListAddressesResponseSchema, answer as never)
      : toBinary(AddressSchema, answer as never);
  } finally {
    session.abort();
  }
}
