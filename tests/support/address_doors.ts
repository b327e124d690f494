/**
 * The address book through each of its doors, with one shape of answer: REST (the generated
 * client, clients/books_client.ts), GraphQL (the typed documents, clients/graphql_client.ts) and
 * AddressService over Connect-ES (native gRPC on the gRPC listener; Connect JSON and gRPC-Web on
 * the HTTP port). Each door reads its own protocol's answer (status, etag, error code) and hands
 * back what it means, so a test can send one operation through any door and compare.
 */
import { create } from "@bufbuild/protobuf";
import { ConnectError, type Transport } from "@connectrpc/connect";
import { createBooksClient, MERGE_PATCH, V2 } from "../../clients/books_client.ts";
import { createGraphqlClient, type GraphqlAnswer } from "../../clients/graphql_client.ts";
import {
  AddressDocument,
  AddressesDocument,
  type AddressFieldsFragment,
  CreateAddressDocument,
  DeleteAddressDocument,
  ReplaceAddressDocument,
  UpdateAddressDocument,
} from "../../clients/gen/graphql.ts";
import { ADDRESS_FIELD_NAMES, type AddressFieldName } from "../../lib/address.ts";
import {
  type Address as AddressMessage,
  AddressSchema,
} from "../../rpc/gen/addresses/v1/addresses_pb.ts";
import { BadRequestSchema } from "../../rpc/gen/google/rpc/error_details_pb.ts";
import { type Address, type AddressInput, bearer } from "./requests.ts";
import {
  addressClient,
  connectTransport,
  errorInfo,
  grpcTransport,
  grpcWebTransport,
} from "./rpc_clients.ts";

/** A merge patch: a field sent replaces the stored one, `null` removes it. */
export type Patch = Partial<Record<AddressFieldName, string | null>>;

/** An address as a door answers it, with its etag (REST's ETag, GraphQL's and gRPC's `etag`). */
export interface Stored {
  address: Address;
  etag: string;
}

/** What an operation came to: its value, or the error code and how many problems it named. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; code: string; problems: number };

/** One page of a listing; `etag` per address where the style answers it (not REST's list). */
export interface Page {
  items: (Address & { etag?: string })[];
  next: string | null;
}

/** The address book of one caller through one door. Ids are numbers, sent as each style does. */
export interface AddressDoor {
  style: string;
  /** A create; `replayed` when the style says so (undefined where it cannot). */
  create(input: AddressInput, key?: string): Promise<Outcome<Stored & { replayed?: boolean }>>;
  /** A read; an absent address is `address-not-found` (GraphQL's `null` included). */
  get(id: number): Promise<Outcome<Stored>>;
  page(size: number, cursor?: string): Promise<Outcome<Page>>;
  /**
   * Version 1 PUT; `created` where the style says so (REST's 201). `ifNoneMatch` (REST's
   * If-None-Match) only through REST: the other doors refuse to send one.
   */
  replace(id: number, input: AddressInput, ifMatch?: string, ifNoneMatch?: string): Promise<
    Outcome<Stored & { created?: boolean }>
  >;
  update(id: number, patch: Patch, ifMatch?: string, ifNoneMatch?: string): Promise<
    Outcome<Stored>
  >;
  remove(id: number, ifMatch?: string, ifNoneMatch?: string): Promise<Outcome<null>>;
}

/** The doors without If-None-Match: a test that gives one there is wrong, not the server. */
function noIfNoneMatch(style: string, ifNoneMatch: string | undefined): void {
  if (ifNoneMatch !== undefined) throw new Error(`${style} has no If-None-Match`);
}

/** The address fields of an answer, an absent (null, empty) one left out, in the table's order. */
function addressOf(id: number, fields: Record<string, unknown>): Address {
  const address: Record<string, unknown> = { id };
  for (const name of ADDRESS_FIELD_NAMES) {
    const value = fields[name];
    if (typeof value === "string" && value !== "") address[name] = value;
  }
  return address as Address;
}

// ---------------------------------------------------------------------------------------------
// REST

interface RestAnswer {
  data?: unknown;
  error?: unknown;
  response: Response;
}

function restOutcome<T>(answer: RestAnswer, value: (data: never) => T): Outcome<T> {
  if (answer.response.ok) return { ok: true, value: value(answer.data as never) };
  const errors = (answer.error as { errors: { error: string }[] }).errors;
  return { ok: false, code: errors[0]!.error, problems: errors.length };
}

function restStored(answer: RestAnswer) {
  return (data: Address): Stored => ({
    address: addressOf(data.id, data as unknown as Record<string, unknown>),
    etag: answer.response.headers.get("etag") ?? "(no ETag)",
  });
}

/** REST through the client generated from the OpenAPI document. */
export function restDoor(base: string, token?: string): AddressDoor & {
  /** Version 2 PUT (REST only): created at `id` or replaced whole. */
  putV2(id: number, input: AddressInput, ifNoneMatch?: string): Promise<
    Outcome<Stored & { created: boolean }>
  >;
} {
  const api = createBooksClient(base, token === undefined ? {} : { token });
  const path = (id: number, ifMatch?: string, ifNoneMatch?: string) => ({
    path: { id },
    header: {
      ...ifMatch !== undefined && { "if-match": ifMatch },
      ...ifNoneMatch !== undefined && { "if-none-match": ifNoneMatch },
    },
  });
  return {
    style: "REST",
    async create(input, key) {
      const header = key === undefined ? {} : { "idempotency-key": key };
      const answer = await api.POST("/addresses", { body: input, params: { header } });
      const replayed = answer.response.headers.get("idempotent-replayed") === "true";
      return restOutcome(answer, (data) => ({ ...restStored(answer)(data), replayed }));
    },
    async get(id) {
      const answer = await api.GET("/addresses/{id}", { params: { path: { id } } });
      return restOutcome(answer, restStored(answer));
    },
    async page(limit, cursor) {
      const query = cursor === undefined ? { limit } : { limit, cursor };
      const answer = await api.GET("/addresses", { params: { query } });
      return restOutcome(answer, (data: { addresses: Address[]; nextCursor: string | null }) => ({
        items: data.addresses.map((a) => addressOf(a.id, a as unknown as Record<string, unknown>)),
        next: data.nextCursor,
      }));
    },
    async replace(id, input, ifMatch, ifNoneMatch) {
      const answer = await api.PUT("/addresses/{id}", {
        params: path(id, ifMatch, ifNoneMatch),
        body: input,
      });
      const created = answer.response.status === 201;
      return restOutcome(answer, (data) => ({ ...restStored(answer)(data), created }));
    },
    async putV2(id, input, ifNoneMatch) {
      const answer = await api.PUT("/addresses/{id}", {
        params: path(id, undefined, ifNoneMatch),
        body: input,
        headers: { "content-type": V2 },
      });
      const created = answer.response.status === 201;
      return restOutcome(answer, (data) => ({ ...restStored(answer)(data), created }));
    },
    async update(id, patch, ifMatch, ifNoneMatch) {
      const answer = await api.PATCH("/addresses/{id}", {
        params: path(id, ifMatch, ifNoneMatch),
        // A merge patch may carry null; the generated type of this all-required address cannot.
        body: patch as Record<string, string>,
        headers: { "content-type": MERGE_PATCH },
      });
      return restOutcome(answer, restStored(answer));
    },
    async remove(id, ifMatch, ifNoneMatch) {
      const answer = await api.DELETE("/addresses/{id}", {
        params: path(id, ifMatch, ifNoneMatch),
      });
      return restOutcome(answer, () => null);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// GraphQL

function fromNode(node: AddressFieldsFragment): Stored {
  return { address: addressOf(Number(node.id), node), etag: node.etag };
}

function graphqlOutcome<D, T>(
  answer: GraphqlAnswer<D>,
  value: (data: D) => T,
): Outcome<T> {
  if (answer.errors?.length) {
    return { ok: false, code: answer.errors[0]!.extensions.code, problems: answer.errors.length };
  }
  return { ok: true, value: value(answer.data!) };
}

/** GraphQL through the typed documents (clients/gen/graphql.ts). */
export function graphqlDoor(base: string, token?: string): AddressDoor {
  const api = createGraphqlClient(base, token === undefined ? {} : { token });
  const ifMatchOf = (ifMatch: string | undefined) => ifMatch === undefined ? {} : { ifMatch };
  return {
    style: "GraphQL",
    async create(input, key) {
      const variables = key === undefined ? { input } : { input, idempotencyKey: key };
      const answer = await api.request(CreateAddressDocument, variables);
      return graphqlOutcome(answer, (data) => fromNode(data.createAddress!));
    },
    async get(id) {
      const answer = await api.request(AddressDocument, { id: String(id) });
      const outcome = graphqlOutcome(answer, (data) => data.address);
      if (!outcome.ok) return outcome;
      // GraphQL's answer for an absent address: null, without an error.
      if (outcome.value === null) return { ok: false, code: "address-not-found", problems: 1 };
      return { ok: true, value: fromNode(outcome.value) };
    },
    async page(first, after) {
      const answer = await api.request(
        AddressesDocument,
        after === undefined ? { first } : {
          first,
          after,
        },
      );
      return graphqlOutcome(answer, ({ addresses }) => ({
        items: addresses.edges.map((edge) => {
          const { address, etag } = fromNode(edge.node);
          return { ...address, etag };
        }),
        next: addresses.pageInfo.hasNextPage ? addresses.pageInfo.endCursor : null,
      }));
    },
    async replace(id, input, ifMatch, ifNoneMatch) {
      noIfNoneMatch("GraphQL", ifNoneMatch);
      const answer = await api.request(ReplaceAddressDocument, {
        id: String(id),
        input,
        ...ifMatchOf(ifMatch),
      });
      return graphqlOutcome(answer, (data) => fromNode(data.replaceAddress!));
    },
    async update(id, patch, ifMatch, ifNoneMatch) {
      noIfNoneMatch("GraphQL", ifNoneMatch);
      const answer = await api.request(UpdateAddressDocument, {
        id: String(id),
        patch,
        ...ifMatchOf(ifMatch),
      });
      return graphqlOutcome(answer, (data) => fromNode(data.updateAddress!));
    },
    async remove(id, ifMatch, ifNoneMatch) {
      noIfNoneMatch("GraphQL", ifNoneMatch);
      const answer = await api.request(DeleteAddressDocument, {
        id: String(id),
        ...ifMatchOf(ifMatch),
      });
      return graphqlOutcome(answer, () => null);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// AddressService (gRPC, Connect, gRPC-Web)

/** The protobuf name of each address field (`postalCode` → `postal_code`): update mask paths. */
const PROTO_NAMES = new Map(
  ADDRESS_FIELD_NAMES.map((name) => [name, AddressSchema.field[name]!.name]),
);

function fromMessage(message: AddressMessage): Stored {
  return {
    address: addressOf(Number(message.id), message as unknown as Record<string, unknown>),
    etag: message.etag,
  };
}

async function rpcOutcome<T>(call: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await call() };
  } catch (error) {
    const failure = ConnectError.from(error);
    const violations = failure.findDetails(BadRequestSchema)[0]?.fieldViolations.length ?? 0;
    const code = errorInfo(failure)?.reason ?? `(no ErrorInfo: ${failure.message})`;
    return { ok: false, code, problems: Math.max(1, violations) };
  }
}

/** The framings AddressService is reached by here. */
export type RpcFraming =
  | "gRPC"
  | "Connect (HTTP port)"
  | "Connect JSON (HTTP port)"
  | "gRPC-Web (HTTP port)";

/** A Connect-ES transport of a framing: native gRPC on the gRPC listener, the others on HTTP. */
export function rpcTransport(
  server: { httpUrl: string; grpcUrl?: string },
  framing: RpcFraming,
): Transport {
  switch (framing) {
    case "gRPC":
      return grpcTransport(server.grpcUrl!);
    case "gRPC-Web (HTTP port)":
      return grpcWebTransport(server.httpUrl, "1.1");
    default:
      return connectTransport(server.httpUrl, "1.1", {
        json: framing === "Connect JSON (HTTP port)",
      });
  }
}

/** AddressService over a transport (rpcTransport), for the caller of `token`. */
export function rpcDoor(transport: Transport, framing: RpcFraming, token?: string): AddressDoor {
  const client = addressClient(transport);
  const headers = bearer(token);
  const message = (fields: Partial<Record<AddressFieldName, string | null>>) =>
    create(
      AddressSchema,
      Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== null)),
    );
  return {
    style: framing,
    create: (input, key) =>
      rpcOutcome(async () => {
        let replayed = false;
        const answer = await client.createAddress(
          { address: message(input), requestId: key ?? "" },
          { headers, onHeader: (h) => (replayed = h.get("idempotent-replayed") === "true") },
        );
        return { ...fromMessage(answer), replayed };
      }),
    get: (id) =>
      rpcOutcome(async () => fromMessage(await client.getAddress({ id: BigInt(id) }, { headers }))),
    page: (pageSize, cursor) =>
      rpcOutcome(async () => {
        const answer = await client.listAddresses(
          { pageSize, pageToken: cursor ?? "" },
          { headers },
        );
        return {
          items: answer.addresses.map((a) => {
            const { address, etag } = fromMessage(a);
            return { ...address, etag };
          }),
          next: answer.nextPageToken === "" ? null : answer.nextPageToken,
        };
      }),
    replace: (id, input, ifMatch, ifNoneMatch) =>
      rpcOutcome(async () => {
        noIfNoneMatch(framing, ifNoneMatch);
        return fromMessage(
          await client.replaceAddress(
            { id: BigInt(id), address: message(input), etag: ifMatch ?? "" },
            { headers },
          ),
        );
      }),
    update: (id, patch, ifMatch, ifNoneMatch) =>
      rpcOutcome(async () => {
        noIfNoneMatch(framing, ifNoneMatch);
        return fromMessage(
          await client.updateAddress({
            id: BigInt(id),
            address: message(patch),
            // A field named but not set is cleared (REST's null).
            updateMask: {
              paths: Object.keys(patch).map((name) => PROTO_NAMES.get(name as AddressFieldName)!),
            },
            etag: ifMatch ?? "",
          }, { headers }),
        );
      }),
    remove: (id, ifMatch, ifNoneMatch) =>
      rpcOutcome(async () => {
        noIfNoneMatch(framing, ifNoneMatch);
        await client.deleteAddress({ id: BigInt(id), etag: ifMatch ?? "" }, { headers });
        return null;
      }),
  };
}
