import {
  GraphQLBoolean,
  type GraphQLFieldConfig,
  GraphQLID,
  type GraphQLInputFieldConfig,
  GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLString,
} from "graphql";
import {
  type Address,
  ADDRESS_FIELD_NAMES,
  ADDRESS_FIELDS,
  type AddressField,
  type AddressFieldName,
} from "../lib/address.ts";

/**
 * The address book's GraphQL types, built from the field table (lib/address.ts): a field added
 * there appears in `Address`, `AddressInput` and `AddressPatch` without a change here, and the
 * SDL served at `/graphql/schema.graphql` is printed from these types
 * (tests/graphql/graphql_drift_test.ts compares both with the table).
 */

const FIELDS: Readonly<Record<AddressFieldName, AddressField>> = ADDRESS_FIELDS;

// The members GraphQL adds to an address; a table field of the same name would be hidden.
const ADDED = ["id", "etag"];
for (const name of ADDED) {
  if (name in FIELDS) throw new Error(`lib/address.ts defines ${name}, which GraphQL adds`);
}

const text = new GraphQLNonNull(GraphQLString);

/** One config per table field, in the table's order. */
function perField<T>(config: (field: AddressField, name: AddressFieldName) => T) {
  return Object.fromEntries(ADDRESS_FIELD_NAMES.map((name) => [name, config(FIELDS[name], name)]));
}

/** A field's rules in words, after what it is (`Required.`): what an input's description says. */
function rules(field: AddressField, what: string): string {
  return `${what} ${field.description ?? `1 to ${field.maxLength} characters after trimming.`}`;
}

/**
 * An address as GraphQL reads it: the stored address's own properties (its id and fields) and its
 * etag beside them. Every field of `Address` is a plain property, so no field has a resolver:
 * graphql-jit reads a property inline, where it calls a resolver with an info object and a
 * response path it builds per field and item (six calls per address of a page).
 */
export type AddressNode = Address & { etag: string };

/** The node of a stored address (`address`, and the ETag of its version). */
export function addressNode(address: Address, etag: string): AddressNode {
  return { ...address, etag };
}

/** A stored address as answered: its id, its fields, its etag. */
export const AddressType: GraphQLObjectType<AddressNode> = new GraphQLObjectType<AddressNode>({
  name: "Address",
  description: "One of the caller's addresses, as `GET /addresses/{id}` answers it.",
  fields: () => ({
    id: {
      type: new GraphQLNonNull(GraphQLID),
      description: "The address's id (REST's integer id, as a string).",
    },
    ...perField((field): GraphQLFieldConfig<AddressNode, unknown> => ({
      type: field.optional ? GraphQLString : text,
      ...(field.description !== undefined && { description: field.description }),
    })),
    etag: {
      type: text,
      description: "The strong entity tag of the stored version, exactly as REST's `ETag` " +
        'header, quotes included (`"…"`): send it as `ifMatch` here, or as `If-Match` over REST.',
    },
  }),
});

/**
 * The input of `createAddress` and `replaceAddress`: REST's `AddressInput`; `null` on an
 * optional field is absent there, as over REST and in proto3 JSON.
 */
export const AddressInputType = new GraphQLInputObjectType({
  name: "AddressInput",
  description: "An address as a create or a replace gives it (REST's `AddressInput`): `null` " +
    "on an optional field means absent, as leaving it out.",
  fields: () =>
    perField((field): GraphQLInputFieldConfig => ({
      type: field.optional ? GraphQLString : text,
      description: rules(
        field,
        field.optional ? "Optional: `null` means absent, as leaving it out." : "Required.",
      ),
    })),
});

/**
 * The input of `updateAddress`: a JSON Merge Patch (RFC 7396, REST's `AddressMergePatch`). Every
 * field is nullable so that `null` can be said: it removes an optional field and is
 * `invalid-field` on a required one, as over REST.
 */
export const AddressPatchType = new GraphQLInputObjectType({
  name: "AddressPatch",
  description: "A JSON Merge Patch of an address (RFC 7396, REST's `AddressMergePatch`): a " +
    "field sent replaces the stored one, a field left out keeps it, `null` removes an " +
    "optional one and is `invalid-field` on a required one.",
  fields: () =>
    perField((field): GraphQLInputFieldConfig => ({
      type: GraphQLString,
      description: rules(
        field,
        field.optional ? "Optional: `null` removes it." : "Required: `null` is `invalid-field`.",
      ),
    })),
});

/** One address of a page and the cursor that resumes after it. */
interface AddressEdge {
  cursor: string;
  node: AddressNode;
}

/** A page of the caller's addresses (a Relay cursor connection). */
export interface AddressPageOut {
  edges: AddressEdge[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

const AddressEdgeType = new GraphQLObjectType<AddressEdge>({
  name: "AddressEdge",
  fields: {
    cursor: {
      type: text,
      description: "Resumes the listing after this address (REST's `cursor`).",
    },
    node: { type: new GraphQLNonNull(AddressType) },
  },
});

const PageInfoType = new GraphQLObjectType<AddressPageOut["pageInfo"]>({
  name: "PageInfo",
  fields: {
    hasNextPage: { type: new GraphQLNonNull(GraphQLBoolean) },
    endCursor: {
      type: GraphQLString,
      description: "The last edge's cursor; null on an empty page. While `hasNextPage`, it is " +
        "REST's `nextCursor`.",
    },
  },
});

/** The `addresses` answer. */
export const AddressConnectionType = new GraphQLObjectType<AddressPageOut>({
  name: "AddressConnection",
  description: "A page of the caller's addresses by ascending id (a Relay cursor connection).",
  fields: {
    edges: {
      type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(AddressEdgeType))),
    },
    pageInfo: { type: new GraphQLNonNull(PageInfoType) },
  },
});
