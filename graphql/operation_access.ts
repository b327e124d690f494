import {
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  Kind,
  type OperationDefinitionNode,
  OperationTypeNode,
  type SelectionSetNode,
} from "graphql";
import type { Access } from "../security/access.ts";
import { CATALOGUE_FIELDS, ROOT_ACCESS } from "./schema.ts";

/** What the operation a request runs needs, decided before it runs. */
export interface OperationPlan {
  operation: OperationDefinitionNode;
  /** What its root fields need, each once, in the order they first appear. */
  accesses: Access[];
  /** Every root field reads the catalogue alone: its result may be cached. */
  catalogueOnly: boolean;
  /** Its root fields as written (an aliased field once per alias). */
  fields: FieldNode[];
  /** The writes it makes (`writesOf`): each is one call against the rate limit. */
  writes: number;
}

/**
 * The plan of `operation`, an operation of a validated document. Root fields are collected
 * through fragment spreads and inline fragments, and `@skip`/`@include` are ignored, so a field
 * that may run counts whether or not it will.
 */
export function planOf(
  document: DocumentNode,
  operation: OperationDefinitionNode,
): OperationPlan {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(definition.name.value, definition);
    }
  }
  const fields = rootFieldsOf(operation, (name) => fragments.get(name));
  const accesses = new Set<Access>();
  let catalogueOnly = true;
  for (const name of new Set(fields.map((field) => field.name.value))) {
    // Deny by default: a root field without a declared access needs a valid token.
    accesses.add(ROOT_ACCESS.get(name) ?? "authenticated");
    if (!CATALOGUE_FIELDS.has(name)) catalogueOnly = false;
  }
  return {
    operation,
    accesses: [...accesses],
    catalogueOnly,
    fields,
    writes: writesOf(operation, fields),
  };
}

/**
 * The root fields of an operation as written (an aliased field once per alias), through fragment
 * spreads and inline fragments, whatever `@skip` and `@include` say. `fragment` finds a fragment
 * by name; an unknown one, or one already spread (a cycle), adds nothing.
 */
export function rootFieldsOf(
  operation: OperationDefinitionNode,
  fragment: (name: string) => FragmentDefinitionNode | undefined | null,
): FieldNode[] {
  const fields: FieldNode[] = [];
  collectRootFields(operation.selectionSet, fragment, fields, new Set());
  return fields;
}

/**
 * The writes a mutation makes: its root fields by response key (fields written twice under one
 * key run once), meta fields (`__typename`) aside. A query makes none.
 */
export function writesOf(
  operation: OperationDefinitionNode,
  fields: readonly FieldNode[],
): number {
  if (operation.operation !== OperationTypeNode.MUTATION) return 0;
  const keys = new Set<string>();
  for (const field of fields) {
    if (!field.name.value.startsWith("__")) keys.add(field.alias?.value ?? field.name.value);
  }
  return keys.size;
}

function collectRootFields(
  selections: SelectionSetNode,
  fragment: (name: string) => FragmentDefinitionNode | undefined | null,
  fields: FieldNode[],
  spread: Set<string>,
): void {
  for (const selection of selections.selections) {
    if (selection.kind === Kind.FIELD) {
      fields.push(selection);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      collectRootFields(selection.selectionSet, fragment, fields, spread);
    } else {
      const name = selection.name.value;
      const definition = fragment(name);
      // Validation rules out unknown fragments and cycles; each is walked once regardless.
      if (!definition || spread.has(name)) continue;
      spread.add(name);
      collectRootFields(definition.selectionSet, fragment, fields, spread);
    }
  }
}
