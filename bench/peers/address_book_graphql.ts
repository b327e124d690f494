// The matrix ceilings' GraphQL: no schema and no executor. A document is parsed once (the first
// time its text is seen, as a server of persisted queries would), its one root field done as one
// operation of address_book_kv.ts, and the answer written by walking the document's selections
// over the result, so the answer has the shape the client asked for (the bench checks it means
// what this server answers). A field it does not know is an error naming it, rather than an
// answer of another shape.
import {
  type DocumentNode,
  type FragmentDefinitionNode,
  Kind,
  type OperationDefinitionNode,
  parse,
  type SelectionSetNode,
  type ValueNode,
} from "graphql";
import { type AddressBook, NotFound, type Page, type Stored } from "./address_book_kv.ts";
import type { Cursors } from "./address_book_text.ts";

const DEFAULT_PAGE = 50;

interface Plan {
  field: string;
  key: string;
  args: readonly { name: string; value: ValueNode }[];
  selections: SelectionSetNode | undefined;
  fragments: Map<string, FragmentDefinitionNode>;
}

const plans = new Map<string, Plan>();

function planOf(query: string, operationName: string | undefined): Plan {
  const cached = plans.get(query);
  if (cached) return cached;
  const document: DocumentNode = parse(query);
  const fragments = new Map<string, FragmentDefinitionNode>();
  let operation: OperationDefinitionNode | undefined;
  for (const d of document.definitions) {
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
    if (
      d.kind === Kind.OPERATION_DEFINITION &&
      (operationName === undefined || d.name?.value === operationName)
    ) operation ??= d;
  }
  const root = operation?.selectionSet.selections[0];
  if (root?.kind !== Kind.FIELD || operation!.selectionSet.selections.length !== 1) {
    throw new Error("the ceiling answers documents of one root field");
  }
  const plan: Plan = {
    field: root.name.value,
    key: root.alias?.value ?? root.name.value,
    args: (root.arguments ?? []).map((a) => ({ name: a.name.value, value: a.value })),
    selections: root.selectionSet,
    fragments,
  };
  plans.set(query, plan);
  return plan;
}

function valueOf(node: ValueNode, variables: Record<string, unknown>): unknown {
  switch (node.kind) {
    case Kind.VARIABLE:
      return variables[node.name.value];
    case Kind.INT:
    case Kind.FLOAT:
      return Number(node.value);
    case Kind.STRING:
    case Kind.ENUM:
      return node.value;
    case Kind.BOOLEAN:
      return node.value;
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return node.values.map((v) => valueOf(v, variables));
    case Kind.OBJECT:
      return Object.fromEntries(
        node.fields.map((f) => [f.name.value, valueOf(f.value, variables)]),
      );
  }
}

/** What a selection is walked over: an address, a page, one of its edges, its page info. */
type Source =
  | { kind: "address"; stored: Stored }
  | { kind: "page"; page: Page; cursors: Cursors }
  | { kind: "edge"; stored: Stored; cursors: Cursors }
  | { kind: "pageInfo"; page: Page; cursors: Cursors };

function fieldOf(source: Source, name: string): unknown {
  switch (source.kind) {
    case "address": {
      const { address, etag } = source.stored;
      if (name === "id") return String(address.id);
      if (name === "etag") return etag;
      if (name === "__typename") return "Address";
      // A mutation's payload type that carries the address as `address` (Relay's convention).
      if (name === "address") return source;
      // An optional field the address lacks is null, as in this server's schema.
      return address[name] ?? null;
    }
    case "page": {
      const { page, cursors } = source;
      if (name === "edges") return page.items.map((stored) => ({ kind: "edge", stored, cursors }));
      if (name === "pageInfo") return { kind: "pageInfo", page, cursors };
      break;
    }
    case "edge":
      if (name === "cursor") return source.cursors.after(source.stored.address.id);
      if (name === "node") return { kind: "address", stored: source.stored };
      break;
    case "pageInfo": {
      const last = source.page.items.at(-1);
      if (name === "hasNextPage") return source.page.next !== null;
      if (name === "endCursor") return last ? source.cursors.after(last.address.id) : null;
      break;
    }
  }
  throw new Error(`the ceiling does not know the field ${name} of ${source.kind}`);
}

function walk(value: unknown, set: SelectionSetNode | undefined, plan: Plan): unknown {
  if (Array.isArray(value)) return value.map((v) => walk(v, set, plan));
  if (set === undefined || value === null || typeof value !== "object") return value ?? null;
  const out: Record<string, unknown> = {};
  const visit = (s: SelectionSetNode) => {
    for (const selection of s.selections) {
      if (selection.kind === Kind.FIELD) {
        const inner = fieldOf(value as Source, selection.name.value);
        out[selection.alias?.value ?? selection.name.value] = walk(
          inner,
          selection.selectionSet,
          plan,
        );
      } else if (selection.kind === Kind.INLINE_FRAGMENT) visit(selection.selectionSet);
      else visit(plan.fragments.get(selection.name.value)!.selectionSet);
    }
  };
  visit(set);
  return out;
}

async function rootValue(
  book: AddressBook,
  field: string,
  args: Record<string, unknown>,
): Promise<unknown> {
  const id = Number(args.id);
  const address = (stored: Stored) => ({ kind: "address", stored });
  switch (field) {
    case "address": {
      const stored = await book.get(id);
      return stored ? address(stored) : null;
    }
    case "addresses": {
      const first = typeof args.first === "number" ? args.first : DEFAULT_PAGE;
      const page = await book.page(first, book.cursors.position(args.after as string));
      return { kind: "page", page, cursors: book.cursors };
    }
    case "createAddress":
      return address(await book.create(args.input as Record<string, unknown>));
    case "replaceAddress":
      return address(await book.replaceV1(id, args.input as Record<string, unknown>));
    case "updateAddress":
      return address(await book.update(id, args.patch as Record<string, unknown>));
    case "deleteAddress":
      await book.remove(id);
      return true;
  }
  throw new Error(`the ceiling does not know the root field ${field}`);
}

/** The JSON answer to a GraphQL request body (`{query, variables, operationName}`). */
export async function graphqlAnswer(book: AddressBook, body: string): Promise<string> {
  const request = JSON.parse(body) as {
    query: string;
    variables?: Record<string, unknown>;
    operationName?: string;
  };
  const plan = planOf(request.query, request.operationName ?? undefined);
  const variables = request.variables ?? {};
  const args = Object.fromEntries(plan.args.map((a) => [a.name, valueOf(a.value, variables)]));
  try {
    const value = await rootValue(book, plan.field, args);
    return JSON.stringify({ data: { [plan.key]: walk(value, plan.selections, plan) } });
  } catch (error) {
    if (!(error instanceof NotFound)) throw error;
    return JSON.stringify({ errors: [{ message: "not found" }], data: null });
  }
}
