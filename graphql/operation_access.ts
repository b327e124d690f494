import {
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  getOperationAST,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from "graphql";
import type { Access } from "../security/access.ts";
import { CATALOGUE_FIELDS, ROOT_ACCESS } from "./schema.ts";

/** What the operation a request runs needs, decided before it runs. */
interface OperationPlan {
  operation: OperationDefinitionNode;
  /** What its root fields need, each once, in the order they first appear. */
  accesses: Access[];
  /** Every root field reads the catalogue alone: its result may be cached. */
  catalogueOnly: boolean;
  /** Its root fields as written (an aliased field once per alias). */
  fields: FieldNode[];
}

/**
 * The plan of the operation `operationName` selects in a validated document; undefined when it
 * selects none (execution then answers the error and runs nothing). Root fields are collected
 * through fragment spreads and inline fragments, and `@skip`/`@include` are ignored, so a field
 * that may run counts whether or not it will.
 */
export function planOf(
  document: DocumentNode,
  operationName: string | undefined,
): OperationPlan | undefined {
  const operation = getOperationAST(document, operationName);
  if (!operation) return undefined;
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(definition.name.value, definition);
    }
  }
  const fields: FieldNode[] = [];
  collectRootFields(operation.selectionSet, fragments, fields, new Set());
  const accesses = new Set<Access>();
  let catalogueOnly = true;
  for (const name of new Set(fields.map((field) => field.name.value))) {
    // Deny by default: a root field without a declared access needs a valid token.
    accesses.add(ROOT_ACCESS.get(name) ?? "authenticated");
    if (!CATALOGUE_FIELDS.has(name)) catalogueOnly = false;
  }
  return { operation, accesses: [...accesses], catalogueOnly, fields };
}

function collectRootFields(
  selections: SelectionSetNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  fields: FieldNode[],
  spread: Set<string>,
): void {
  for (const selection of selections.selections) {
    if (selection.kind === Kind.FIELD) {
      fields.push(selection);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      collectRootFields(selection.selectionSet, fragments, fields, spread);
    } else {
      const name = selection.name.value;
      const fragment = fragments.get(name);
      // Validation rules out unknown fragments and cycles; each is walked once regardless.
      if (fragment === undefined || spread.has(name)) continue;
      spread.add(name);
      collectRootFields(fragment.selectionSet, fragments, fields, spread);
    }
  }
}
