/**
 * One behaviour, two doors: random sequences of address-book operations, each sent over gRPC
 * (AddressService, Connect-ES) by one owner and as the REST request that means the same by
 * another, in lockstep. Each operation must get the same code in both styles (REST's
 * `errors[0].error`, gRPC's ErrorInfo.reason, or success), a refused write must store nothing,
 * and both owners' books must hold the same addresses throughout. Every sequence has two owners
 * of its own. docs/fuzzing.md: replaying.
 *
 * What the gRPC request means is read off the protobuf message itself (`isFieldSet`): a field
 * without presence is set when not empty, a field with presence (`optional string`, an optional
 * field of the table) when given, `""` included. So `""` is an absent member in REST for the one
 * and `""` for the other, and a field left out (or `null`) is absent for both; an update with a
 * mask sends a named field that is not set as REST's `null` (removing an optional field).
 * tests/lib/optional_field_test.ts runs this file with a table that has an optional field.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { create, type DescField, isFieldSet } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { ADDRESS_FIELD_NAMES, type AddressFieldName } from "../../lib/address.ts";
import { PAGE_SIZE } from "../../lib/schemas.ts";
import {
  type Address as AddressMessage,
  AddressSchema,
} from "../../rpc/gen/addresses/v1/addresses_pb.ts";
import { fuzz, headerText, nastyString } from "../support/fuzz.ts";
import { validAddress } from "../support/fuzz_http.ts";
import { addressBook, bearer, type Fields, JSON_TYPE, MERGE_PATCH } from "../support/requests.ts";
import { addressClient, errorInfo, grpcTransport } from "../support/rpc_clients.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

/** The fields of an operation: each absent, `null` (absent in a message) or a text, "" too. */
type Input = Partial<Record<AddressFieldName, string | null>>;
/** An address's fields as stored or set. */
type Texts = Partial<Record<AddressFieldName, string>>;
/** An id: one of the side's own addresses (by creation order), or one nobody can hold. */
type Id = { own: number } | { raw: bigint };
/** An etag: none, the address's current one, or text. */
type Etag = undefined | { current: true } | string;
/**
 * Where an update or replace carries its etag over gRPC (AIP-154): the request's `etag`, the
 * resource's `address.etag`, or both (the same). Each means REST's If-Match.
 */
type EtagAt = "request" | "resource" | "both";

type Op =
  | { kind: "create"; input: Input; key: string | undefined }
  | { kind: "replace"; id: Id; input: Input; etag: Etag; at: EtagAt }
  | { kind: "update"; id: Id; input: Input; etag: Etag; at: EtagAt; mask: boolean }
  | { kind: "get"; id: Id }
  | { kind: "delete"; id: Id; etag: Etag }
  | { kind: "list"; pageSize: number; pageToken: string | { next: true } };

const MAX = BigInt(Number.MAX_SAFE_INTEGER);

const fieldValue: fc.Arbitrary<string | null> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom("", " ", "Ada", "10115", "a-b 1") },
  { weight: 3, arbitrary: nastyString(30) },
  { weight: 1, arbitrary: fc.integer({ min: 190, max: 210 }).map((n) => "x".repeat(n)) },
  { weight: 1, arbitrary: fc.constant(null) },
);
const input: fc.Arbitrary<Input> = fc.oneof(
  validAddress,
  fc.record(Object.fromEntries(ADDRESS_FIELD_NAMES.map((name) => [name, fieldValue])), {
    requiredKeys: [],
  }),
);
const id: fc.Arbitrary<Id> = fc.oneof(
  { weight: 4, arbitrary: fc.nat(20).map((own) => ({ own })) },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.bigInt(-(2n ** 63n), 0n),
      fc.bigInt(MAX - 3n, MAX + 3n),
      fc.bigInt(MAX, 2n ** 63n - 1n),
    ).map((raw) => ({ raw })),
  },
);
/** Header-safe text: fetch trims surrounding whitespace, a proto field does not. */
const headerSafe = (max: number) => headerText(max).filter((s) => s !== "" && s.trim() === s);
const etag: fc.Arbitrary<Etag> = fc.oneof(
  fc.constant(undefined),
  fc.constant({ current: true as const }),
  fc.constantFrom("*", 'W/"x"', '"00000000000000010000"'),
  headerSafe(20),
  fc.constant("e".repeat(1001)),
);
const etagAt: fc.Arbitrary<EtagAt> = fc.constantFrom("request", "resource", "both");
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant("create" as const),
    input,
    key: fc.option(fc.oneof(fc.constantFrom("k1", "k2"), headerSafe(260)), { nil: undefined }),
  }),
  fc.record({ kind: fc.constant("replace" as const), id, input, etag, at: etagAt }),
  fc.record({
    kind: fc.constant("update" as const),
    id,
    input,
    etag,
    at: etagAt,
    mask: fc.boolean(),
  }),
  fc.record({ kind: fc.constant("get" as const), id }),
  fc.record({ kind: fc.constant("delete" as const), id, etag }),
  fc.record({
    kind: fc.constant("list" as const),
    pageSize: fc.oneof(fc.integer({ min: -2, max: 3 }), fc.integer({ min: 0, max: 600 })),
    pageToken: fc.oneof(
      fc.constant(""),
      fc.constant({ next: true as const }),
      headerSafe(50),
    ),
  }),
);

/** One owner's view through one style: what it has created, and how it does each operation. */
interface Side {
  ids: number[];
  next: string;
  /** The operation's code ("ok" on success) and the address's id if one was answered. */
  run(op: Op): Promise<{ code: string; id?: number }>;
  /** The owner's addresses, ids left out (they differ between owners). */
  book(): Promise<Texts[]>;
}

function idOf(side: Side, ref: Id): bigint {
  if ("raw" in ref) return ref.raw;
  // With nothing created yet: an id no POST reaches, absent for both owners.
  return BigInt(side.ids.length === 0 ? Number(MAX) - 7 : side.ids[ref.own % side.ids.length]!);
}

/** The fields an answer holds, well-formed: both styles store a lone surrogate apart. */
function comparable(address: Record<string, unknown>): Texts {
  const out: Texts = {};
  for (const name of ADDRESS_FIELD_NAMES) {
    const value = address[name];
    if (typeof value === "string" && value !== "") out[name] = value.toWellFormed();
  }
  return out;
}

/** The protobuf field of each address field, by the table's name. */
const PROTO_FIELD: Readonly<Record<string, DescField>> = AddressSchema.field;

/** The Address message of an input: its texts given (`null` and absent fields are not). */
function messageOf(input: Input): AddressMessage {
  const texts = Object.entries(input).filter(([, value]) => typeof value === "string");
  return create(AddressSchema, Object.fromEntries(texts));
}

/** The fields the message sets, as proto3 says (an empty one without presence is not set). */
function setFields(input: Input): Texts {
  const message = messageOf(input) as unknown as Record<string, string>;
  const set: Texts = {};
  for (const name of ADDRESS_FIELD_NAMES) {
    if (isFieldSet(message as never, PROTO_FIELD[name]!)) set[name] = message[name];
  }
  return set;
}

/**
 * The merge patch an update means: the fields the message sets; with a mask naming every field of
 * the input, those it names and does not set as `null`.
 */
function patchOf(input: Input, masked: boolean): Partial<Record<AddressFieldName, string | null>> {
  const set = setFields(input);
  if (!masked) return set;
  return Object.fromEntries(
    Object.keys(input).map((name) => [name, set[name as AddressFieldName] ?? null]),
  );
}

/** The update mask naming every field of the input (protobuf names: `postal_code`). */
function maskOf(input: Input): { paths: string[] } {
  return {
    paths: Object.keys(input).map((name) => PROTO_FIELD[name]!.name),
  };
}

function restSide(base: string, token: string): Side {
  const auth = bearer(token);
  const api = addressBook(base, auth);
  const send = (method: string, path: string, body?: unknown, headers: Fields = {}) =>
    fetch(`${base}${path}`, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : JSON_TYPE), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const side: Side = {
    ids: [],
    next: "",
    async run(op) {
      const ifMatch = async (target: string, tag: Etag): Promise<Fields> => {
        if (tag === undefined) return {};
        if (typeof tag === "string") return { "if-match": tag };
        const current = await send("GET", target);
        await current.body?.cancel();
        return { "if-match": current.headers.get("etag") ?? '"none"' };
      };
      let res: Response;
      if (op.kind === "create") {
        const key: Fields = op.key === undefined ? {} : { "idempotency-key": op.key };
        res = await send("POST", "/addresses", setFields(op.input), key);
      } else if (op.kind === "list") {
        const token = typeof op.pageToken === "string" ? op.pageToken : side.next;
        const query = new URLSearchParams();
        if (op.pageSize !== 0) query.set("limit", String(op.pageSize));
        if (token !== "") query.set("cursor", token);
        res = await send("GET", `/addresses?${query}`);
      } else {
        const target = `/addresses/${idOf(side, op.id)}`;
        if (op.kind === "get") res = await send("GET", target);
        else {
          const headers = await ifMatch(target, op.etag);
          if (op.kind === "delete") res = await send("DELETE", target, undefined, headers);
          else if (op.kind === "replace") {
            res = await send("PUT", target, setFields(op.input), headers);
          } else {
            const patch = { ...headers, "content-type": MERGE_PATCH };
            res = await send("PATCH", target, patchOf(op.input, op.mask), patch);
          }
        }
      }
      const body = res.status === 204 ? undefined : await res.json();
      if (res.status >= 300) return { code: body.errors[0].error };
      if (op.kind === "list") side.next = body.nextCursor ?? "";
      return { code: "ok", id: body?.id };
    },
    book: async () => (await api.listAll()).map((a) => comparable(a)),
  };
  return side;
}

function rpcSide(grpcUrl: string, token: string): Side {
  const client = addressClient(grpcTransport(grpcUrl));
  const options = { headers: bearer(token) };
  const side: Side = {
    ids: [],
    next: "",
    async run(op) {
      const etagOf = async (target: bigint, tag: Etag): Promise<string> => {
        if (tag === undefined) return "";
        if (typeof tag === "string") return tag;
        return await client.getAddress({ id: target }, options).then((a) => a.etag, () => '"none"');
      };
      try {
        switch (op.kind) {
          case "create": {
            const request = { address: messageOf(op.input), requestId: op.key ?? "" };
            return answered(await client.createAddress(request, options));
          }
          case "list": {
            const pageToken = typeof op.pageToken === "string" ? op.pageToken : side.next;
            const page = await client.listAddresses({ pageSize: op.pageSize, pageToken }, options);
            side.next = page.nextPageToken;
            return { code: "ok" };
          }
          case "get":
            return answered(await client.getAddress({ id: idOf(side, op.id) }, options));
        }
        const target = idOf(side, op.id);
        const etag = await etagOf(target, op.etag);
        if (op.kind === "delete") {
          await client.deleteAddress({ id: target, etag }, options);
          return { code: "ok" };
        }
        const address = messageOf(op.input);
        if (op.at !== "request") address.etag = etag;
        const request = { id: target, address, etag: op.at === "resource" ? "" : etag };
        return answered(
          op.kind === "replace"
            ? await client.replaceAddress(request, options)
            : await client.updateAddress(
              op.mask ? { ...request, updateMask: maskOf(op.input) } : request,
              options,
            ),
        );
      } catch (error) {
        return { code: errorInfo(error as ConnectError)?.reason ?? String(error) };
      }
    },
    async book() {
      const all: Texts[] = [];
      let pageToken = "";
      do {
        const page = await client.listAddresses({ pageSize: PAGE_SIZE.max, pageToken }, options);
        all.push(...page.addresses.map((a) => comparable(a as unknown as Record<string, unknown>)));
        pageToken = page.nextPageToken;
      } while (pageToken !== "");
      return all;
    },
  };
  return side;
}

function answered(address: { id: bigint }): { code: string; id: number } {
  return { code: "ok", id: Number(address.id) };
}

Deno.test("random operations get the same code over gRPC as over REST, and the same state", async () => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET });
  const scope = "addresses:read addresses:write";
  let sequence = 0;
  try {
    await fuzz("address styles", 40, fc.array(op, { minLength: 1, maxLength: 6 }), async (ops) => {
      // Two owners of its own: a sequence (shrunk ones too) starts from two empty books.
      sequence++;
      const sides: [string, Side][] = [
        ["REST", restSide(server.httpUrl, await hsToken({ sub: `rest-${sequence}`, scope }))],
        ["gRPC", rpcSide(server.grpcUrl!, await hsToken({ sub: `grpc-${sequence}`, scope }))],
      ];
      for (const [step, operation] of ops.entries()) {
        const what = `step ${step}: ${
          JSON.stringify(operation, (_, v) =>
            // bigint
            typeof v === "bigint" ? String(v) : v).slice(0, 300)
        }`;
        const results: { code: string; id?: number }[] = [];
        for (const [, side] of sides) {
          const before = operation.kind === "list" || operation.kind === "get"
            ? undefined
            : (await side.book()).length;
          const result = await side.run(operation);
          if (result.code !== "ok" && before !== undefined) {
            assert.equal((await side.book()).length, before, `${what}: a refusal stored something`);
          }
          if (result.id !== undefined && !side.ids.includes(result.id)) side.ids.push(result.id);
          results.push(result);
        }
        assert.equal(results[1]!.code, results[0]!.code, `${what}: gRPC vs REST`);
      }
      const [rest, grpc] = await Promise.all(sides.map(([, side]) => side.book()));
      assert.deepEqual(grpc, rest, "both owners hold the same addresses");
    });
  } finally {
    await server.close();
  }
});
