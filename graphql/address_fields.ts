import {
  GraphQLBoolean,
  type GraphQLFieldConfig,
  GraphQLID,
  GraphQLInt,
  GraphQLNonNull,
  GraphQLString,
} from "graphql";
import {
  type Address,
  type AddressInput,
  AddressInputSchema,
  AddressPatchSchema,
  fieldListText,
  mergePatch,
  V1_KEPT,
  V1_REPLACED,
} from "../lib/address.ts";
import { AppError } from "../lib/errors.ts";
import { ifMatchPrecondition } from "../lib/http/etag.ts";
import { invalidInput, type ZodIssueLike } from "../lib/http/invalid_input.ts";
import { IfMatchSchema } from "../lib/http/openapi.ts";
import { IdempotencyKeySchema } from "../lib/idempotency_key.ts";
import { IdParamSchema, isPageSize, PAGE_SIZE } from "../lib/schemas.ts";
import type { Scope } from "../security/access.ts";
import type { AddressStore, StoredAddress } from "../store/addresses/repository.ts";
import {
  AddressConnectionType,
  AddressInputType,
  type AddressNode,
  addressNode,
  type AddressPageOut,
  AddressPatchType,
  AddressType,
} from "./address_types.ts";

/**
 * The address book's root fields: what each does, with the store and the rules REST uses
 * (routes/addresses.ts), and the scope each needs. Every call acts for the caller's owner, so
 * another owner's address is absent here as it is over REST and gRPC.
 */

/** What a request's address fields act with: the caller's owner and the store. */
interface AddressContext {
  owner: string;
  addresses: AddressStore;
}

/** A root field and the scope a call of it needs. */
export interface AddressRootField {
  access: Scope;
  // deno-lint-ignore no-explicit-any
  config: GraphQLFieldConfig<unknown, AddressContext, any>;
}

/** `invalid-parameter` for an argument, worded like REST's for a parameter. */
function invalidArgument(name: string, issues: readonly ZodIssueLike[]): AppError {
  return new AppError("invalid-parameter", `Argument "${name}" ${issues[0]?.message}.`);
}

/** REST's id rule (a positive integer up to 2^53 − 1) on a GraphQL `ID`. */
function idOf(id: string): number {
  const parsed = IdParamSchema.shape.id.safeParse(id);
  if (!parsed.success) throw invalidArgument("id", parsed.error.issues);
  return parsed.data;
}

/** REST's body rules: one `invalid-field` problem per field, trimmed values when valid. */
function inputOf(value: unknown): AddressInput {
  const parsed = AddressInputSchema.safeParse(value);
  if (!parsed.success) throw invalidInput("json", parsed.error.issues);
  return parsed.data;
}

/** `ifMatch` as REST's `If-Match`: the store's precondition, or none. */
function preconditionOf(ifMatch: string | null | undefined) {
  if (ifMatch === null || ifMatch === undefined) return undefined;
  const parsed = IfMatchSchema.safeParse(ifMatch);
  if (!parsed.success) throw invalidArgument("ifMatch", parsed.error.issues);
  return ifMatchPrecondition(ifMatch);
}

function keyOf(key: string | null | undefined): string | undefined {
  if (key === null || key === undefined) return undefined;
  const parsed = IdempotencyKeySchema.safeParse(key);
  if (!parsed.success) throw invalidArgument("idempotencyKey", parsed.error.issues);
  return key;
}

/**
 * The arguments REST reads before an address body (the path's id, the If-Match header), each
 * with its rule; throws as the root field would. A request wrong there and in its address input
 * gets the code of the argument, as over REST and gRPC (graphql/operation_checks.ts).
 */
export const CHECKED_BEFORE_INPUT = new Map<string, (value: string) => unknown>([
  ["id", idOf],
  ["ifMatch", preconditionOf],
]);

/**
 * A store page as a Relay connection: each edge's cursor resumes after it. Cursors are page
 * tokens, made together (one cipher pass for the page) with the page, whether or not the query
 * selects them: as plain properties they are read inline, where a resolver per edge cost more
 * than the pass.
 */
async function page(
  context: AddressContext,
  first: number | null | undefined,
  after: string | null | undefined,
): Promise<AddressPageOut> {
  const limit = first ?? PAGE_SIZE.default;
  if (!isPageSize(limit)) {
    throw new AppError(
      "invalid-parameter",
      `Argument "first" must be an integer from 1 to ${PAGE_SIZE.max}.`,
    );
  }
  let listed;
  try {
    listed = await context.addresses.list(context.owner, { limit, cursor: after ?? undefined });
  } catch (error) {
    // The store names REST's parameter.
    if (error instanceof AppError && error.code === "invalid-parameter") {
      throw new AppError(
        "invalid-parameter",
        'Argument "after" is not a cursor this server issued.',
      );
    }
    throw error;
  }
  const { items, nextCursor } = listed;
  const cursors = items.length === 0
    ? []
    : await context.addresses.cursorsAfter(context.owner, items.map((item) => item.address.id));
  return {
    edges: items.map((item, n) => ({
      cursor: cursors[n]!,
      node: addressNode(item.address, item.etag),
    })),
    pageInfo: {
      hasNextPage: nextCursor !== null,
      // The last edge's cursor: when a page follows, it is REST's nextCursor (the same token of
      // the same id).
      endCursor: cursors.at(-1) ?? null,
    },
  };
}

/** What an `Address` field answers for a stored address, or null for none. */
function nodeOf(stored: StoredAddress | undefined): AddressNode | null {
  return stored === undefined ? null : addressNode(stored.address, stored.etag);
}

const id = { type: new GraphQLNonNull(GraphQLID) };
const ifMatch = {
  type: GraphQLString,
  description: "As REST's `If-Match`: an `Address.etag` (quotes included), a comma-separated " +
    "list of them, or `*`. The write happens only if the address still has one of them (strong " +
    "comparison: a weak `W/` tag never matches), else `precondition-failed`.",
};
/**
 * What a mutation answers: nullable, so that a write that fails is `null` with its error while the
 * fields before and after it (run one after another, as the GraphQL specification executes a
 * mutation's fields) keep what they stored. A non-null result would null the whole `data`, hiding
 * the ids and etags of the writes that succeeded.
 */
const written = AddressType;
const FAILED = " Null, with the error in `errors`, when it fails; the operation's other writes " +
  "still run and answer.";

/** The root field that reads a page of addresses. */
export const PAGE_FIELD = "addresses";

/** The queries: `address` and `addresses` (`addresses:read`). */
export const ADDRESS_QUERIES: Readonly<Record<string, AddressRootField>> = {
  address: {
    access: "addresses:read",
    config: {
      type: AddressType,
      description: "One of the caller's addresses (`GET /addresses/{id}`); null when there is " +
        "none with this id, or it is another owner's.",
      args: { id },
      resolve: async (_, args: { id: string }, context: AddressContext) =>
        nodeOf(await context.addresses.get(context.owner, idOf(args.id))),
    },
  },
  [PAGE_FIELD]: {
    access: "addresses:read",
    config: {
      type: new GraphQLNonNull(AddressConnectionType),
      description: "The caller's addresses by ascending id, a page at a time (`GET /addresses`).",
      args: {
        first: {
          type: GraphQLInt,
          description: `Page size (REST's \`limit\`): 1 to ${PAGE_SIZE.max}, ` +
            `${PAGE_SIZE.default} when left out; else \`invalid-parameter\`.`,
        },
        after: {
          type: GraphQLString,
          description: "An edge's `cursor` (or REST's `nextCursor`): the page starts after it. " +
            "Opaque; one this server did not issue is `invalid-parameter`.",
        },
      },
      resolve: (_, args: { first?: number | null; after?: string | null }, context) =>
        page(context, args.first, args.after),
    },
  },
};

/** The mutations (`addresses:write`), each REST's write of the same name. */
export const ADDRESS_MUTATIONS: Readonly<Record<string, AddressRootField>> = {
  createAddress: {
    access: "addresses:write",
    config: {
      type: written,
      description: "Stores the address for the caller with a new id (`POST /addresses`)." + FAILED,
      args: {
        input: { type: new GraphQLNonNull(AddressInputType) },
        idempotencyKey: {
          type: GraphQLString,
          description: "REST's `Idempotency-Key` (1 to 255 visible ASCII characters), in the " +
            "same store: within 24 hours a repeat with the same input answers the first " +
            "creation (same id and etag) and creates nothing; with another input it is " +
            "`idempotency-key-reused`, or `request-in-progress` while the first still runs. " +
            "Scoped to the caller, whichever style sent it.",
        },
      },
      resolve: async (
        _,
        args: { input: unknown; idempotencyKey?: string | null },
        context: AddressContext,
      ): Promise<AddressNode | null> =>
        nodeOf(
          await context.addresses.create(
            context.owner,
            inputOf(args.input),
            keyOf(args.idempotencyKey),
          ),
        ),
    },
  },
  replaceAddress: {
    access: "addresses:write",
    config: {
      type: written,
      description: "REST's version 1 `PUT /addresses/{id}`: the caller's existing address gets " +
        `${fieldListText(V1_REPLACED)} from the input and keeps its ${fieldListText(V1_KEPT)}; ` +
        "otherwise (absent, or another owner's) the input is stored as a new address with a " +
        "generated id, which the answer carries. Version 2 (create at this id, replace every " +
        "field) is chosen over REST by its media type and has no counterpart here." + FAILED,
      args: { id, input: { type: new GraphQLNonNull(AddressInputType) }, ifMatch },
      resolve: async (
        _,
        args: { id: string; input: unknown; ifMatch?: string | null },
        context: AddressContext,
      ): Promise<AddressNode | null> => {
        // REST's order: the path, the headers, the body.
        const id = idOf(args.id);
        const expected = preconditionOf(args.ifMatch);
        return nodeOf(
          await context.addresses.put(context.owner, id, inputOf(args.input), expected),
        );
      },
    },
  },
  updateAddress: {
    access: "addresses:write",
    config: {
      type: written,
      description: "Applies a merge patch to one of the caller's addresses " +
        "(`PATCH /addresses/{id}`); none with this id is `address-not-found`." + FAILED,
      args: { id, patch: { type: new GraphQLNonNull(AddressPatchType) }, ifMatch },
      resolve: async (
        _,
        args: { id: string; patch: unknown; ifMatch?: string | null },
        context: AddressContext,
      ): Promise<AddressNode | null> => {
        const id = idOf(args.id);
        const expected = preconditionOf(args.ifMatch);
        const parsed = AddressPatchSchema.safeParse(args.patch);
        if (!parsed.success) throw invalidInput("json", parsed.error.issues);
        const patch = parsed.data;
        const change = (current: Address) => mergePatch(current, patch);
        return nodeOf(await context.addresses.patch(context.owner, id, change, expected));
      },
    },
  },
  deleteAddress: {
    access: "addresses:write",
    config: {
      type: GraphQLBoolean,
      description: "Deletes one of the caller's addresses (`DELETE /addresses/{id}`): true; " +
        "none with this id is `address-not-found`. Its id is never handed out again." + FAILED,
      args: { id, ifMatch },
      resolve: async (_, args: { id: string; ifMatch?: string | null }, context) => {
        await context.addresses.delete(
          context.owner,
          idOf(args.id),
          preconditionOf(args.ifMatch),
        );
        return true;
      },
    },
  },
};
