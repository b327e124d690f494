// What the operation × framing matrix sends: each address operation as each framing's client
// sends it, built from the project's own definitions so that a change to them reaches the bench:
// the address and its example from lib/address.ts, REST's media types from lib/http, the GraphQL
// documents of clients/graphql/addresses.graphql (clients/gen/graphql.ts), and the protobuf
// messages and method names of the generated AddressService (rpc/gen).
import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import type { DocumentNode } from "graphql";
import { print } from "graphql";
import {
  AddressDocument,
  AddressesDocument,
  CreateAddressDocument,
  DeleteAddressDocument,
  ReplaceAddressDocument,
  UpdateAddressDocument,
} from "../../clients/gen/graphql.ts";
import {
  AddressService,
  CreateAddressRequestSchema,
  DeleteAddressRequestSchema,
  GetAddressRequestSchema,
  ListAddressesRequestSchema,
  ReplaceAddressRequestSchema,
  UpdateAddressRequestSchema,
} from "../../rpc/gen/addresses/v1/addresses_pb.ts";
import {
  ADDRESS_FIELD_NAMES,
  type AddressInput,
  AddressInputSchema,
  EXAMPLE_INPUT,
  sameAddress,
} from "../../lib/address.ts";
import { MERGE_PATCH_JSON } from "../../lib/http/body.ts";
import { VENDOR_JSON_V2 } from "../../lib/http/negotiate.ts";

export type Operation = "create" | "read" | "page" | "replace" | "update" | "delete";
export type Framing = "REST" | "GraphQL" | "Connect" | "gRPC" | "gRPC-Web";

/** The rows and columns of the matrix, in the table's order. */
export const OPERATIONS: readonly Operation[] = [
  "create",
  "read",
  "page",
  "replace",
  "update",
  "delete",
];
export const FRAMINGS: readonly Framing[] = ["REST", "GraphQL", "Connect", "gRPC", "gRPC-Web"];

/** Writes: judged against the same operation over REST. */
export const WRITES: readonly Operation[] = ["create", "replace", "update", "delete"];

/** Addresses in a page. */
export const PAGE = 50;

/**
 * The two inputs a replace or update alternates between, so every write changes the address: A
 * is the table's example (what the seeded addresses hold), B each of its fields reversed (the
 * same length, so answers keep their size; checked valid by the request schema).
 */
export const INPUT_A: AddressInput = EXAMPLE_INPUT;
export const INPUT_B: AddressInput = (() => {
  const fields = Object.fromEntries(
    ADDRESS_FIELD_NAMES.flatMap((name) => {
      const value = (INPUT_A as Record<string, string | undefined>)[name];
      return value === undefined ? [] : [[name, [...value].reverse().join("")]];
    }),
  );
  const parsed = AddressInputSchema.safeParse(fields);
  if (!parsed.success || sameAddress(parsed.data, INPUT_A)) {
    throw new Error("bench/matrix: the example address reversed is no other valid address");
  }
  return parsed.data;
})();

export type Variant = "A" | "B";
export const inputOf = (variant: Variant): AddressInput => variant === "A" ? INPUT_A : INPUT_B;

/** How one framing reaches the server: over HTTP (wrk, fetch) or the gRPC listener. */
export interface Wire {
  /** gRPC: calls on the gRPC listener; else requests on the HTTP port. */
  grpc: boolean;
  /** Content-Type of a request with a body. */
  contentType: string;
  /** Other headers its client sends with every request. */
  headers: Record<string, string>;
}

/** One request of an operation (for gRPC: `path` is the method, `body` the message). */
export interface MatrixRequest {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  body?: Uint8Array<ArrayBuffer>;
}

const RPC_METHOD = {
  create: AddressService.method.createAddress,
  read: AddressService.method.getAddress,
  page: AddressService.method.listAddresses,
  replace: AddressService.method.replaceAddress,
  update: AddressService.method.updateAddress,
  delete: AddressService.method.deleteAddress,
} as const;

/** The AddressService method of an operation (its answer's schema is `output`). */
export function rpcMethodOf(op: Operation) {
  return RPC_METHOD[op];
}

const GRAPHQL_DOCUMENT: Record<Operation, DocumentNode> = {
  create: CreateAddressDocument,
  read: AddressDocument,
  page: AddressesDocument,
  replace: ReplaceAddressDocument,
  update: UpdateAddressDocument,
  delete: DeleteAddressDocument,
};
const printed = new Map<Operation, string>();

/** The root field an operation's GraphQL document asks for (`address`, `createAddress`, …). */
export function graphqlRootOf(op: Operation): string {
  for (const d of GRAPHQL_DOCUMENT[op].definitions) {
    const first = d.kind === "OperationDefinition" ? d.selectionSet.selections[0] : undefined;
    if (first?.kind === "Field") return first.alias?.value ?? first.name.value;
  }
  throw new Error(`bench/matrix: the ${op} document has no root field`);
}

/** How each framing's client sends its requests. */
export function wireOf(framing: Framing, op: Operation): Wire {
  switch (framing) {
    case "REST":
      return {
        grpc: false,
        contentType: op === "replace"
          ? VENDOR_JSON_V2
          : op === "update"
          ? MERGE_PATCH_JSON
          : "application/json",
        headers: {},
      };
    case "GraphQL":
      return { grpc: false, contentType: "application/json", headers: {} };
    // What @connectrpc/connect-web's transports send besides the body.
    case "Connect":
      return {
        grpc: false,
        contentType: "application/proto",
        headers: { "connect-protocol-version": "1" },
      };
    case "gRPC-Web":
      return {
        grpc: false,
        contentType: "application/grpc-web+proto",
        headers: { "x-grpc-web": "1" },
      };
    case "gRPC":
      return { grpc: true, contentType: "application/grpc", headers: {} };
  }
}

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

function encoded<T extends DescMessage>(
  schema: T,
  init: MessageInitShape<T>,
): Uint8Array<ArrayBuffer> {
  return toBinary(schema, create(schema, init));
}

/** The protobuf request message of an operation on address `id`. */
function rpcMessage(op: Operation, id: number, variant: Variant): Uint8Array<ArrayBuffer> {
  const address = inputOf(variant);
  switch (op) {
    case "create":
      return encoded(CreateAddressRequestSchema, { address });
    case "read":
      return encoded(GetAddressRequestSchema, { id: BigInt(id) });
    case "page":
      return encoded(ListAddressesRequestSchema, { pageSize: PAGE });
    case "replace":
      return encoded(ReplaceAddressRequestSchema, { id: BigInt(id), address });
    // No mask: the fields set are the patch (every field of the input).
    case "update":
      return encoded(UpdateAddressRequestSchema, { id: BigInt(id), address });
    case "delete":
      return encoded(DeleteAddressRequestSchema, { id: BigInt(id) });
  }
}

function graphqlVariables(op: Operation, id: number, variant: Variant): Record<string, unknown> {
  switch (op) {
    case "create":
      return { input: inputOf(variant) };
    case "read":
    case "delete":
      return { id: String(id) };
    case "page":
      return { first: PAGE };
    case "replace":
      return { id: String(id), input: inputOf(variant) };
    // A merge patch of every field.
    case "update":
      return { id: String(id), patch: inputOf(variant) };
  }
}

/**
 * The request of `op` on address `id` (ignored by create and page) with input `variant`, as the
 * framing's client sends it; for gRPC the method's path and the message (unframed).
 */
export function requestOf(
  op: Operation,
  framing: Framing,
  id: number,
  variant: Variant,
): MatrixRequest {
  if (framing === "REST") {
    const one = `/addresses/${id}`;
    switch (op) {
      case "create":
        return { method: "POST", path: "/addresses", body: json(inputOf(variant)) };
      case "read":
        return { method: "GET", path: one };
      case "page":
        return { method: "GET", path: `/addresses?limit=${PAGE}` };
      case "replace":
        return { method: "PUT", path: one, body: json(inputOf(variant)) };
      case "update":
        return { method: "PATCH", path: one, body: json(inputOf(variant)) };
      case "delete":
        return { method: "DELETE", path: one };
    }
  }
  if (framing === "GraphQL") {
    let query = printed.get(op);
    if (query === undefined) printed.set(op, query = print(GRAPHQL_DOCUMENT[op]));
    return {
      method: "POST",
      path: "/graphql",
      body: json({ query, variables: graphqlVariables(op, id, variant) }),
    };
  }
  const path = `/${AddressService.typeName}/${rpcMethodOf(op).name}`;
  const message = rpcMessage(op, id, variant);
  return { method: "POST", path, body: framing === "gRPC-Web" ? framed(message) : message };
}

/** A gRPC (or gRPC-Web) message in its 5-byte frame, uncompressed. */
export function framed(message: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(5 + message.byteLength);
  new DataView(out.buffer).setUint32(1, message.byteLength);
  out.set(message, 5);
  return out;
}

/** A framing's name in workload ids: `rest`, `graphql`, `connect`, `grpc`, `grpc-web`. */
export function slugOf(framing: Framing): string {
  return framing.toLowerCase();
}

/** An operation as the table names it. */
export const OPERATION_TITLES: Record<Operation, string> = {
  create: "create",
  read: "read by id",
  page: `page of ${PAGE}`,
  replace: "replace",
  update: "update",
  delete: "delete",
};
