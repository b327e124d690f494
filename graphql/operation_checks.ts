import { type FieldNode, Kind, type OperationDefinitionNode } from "graphql";
import type { z } from "@hono/zod-openapi";
import { AddressInputSchema, AddressPatchSchema } from "../lib/address.ts";
import type { Problem } from "../lib/errors.ts";
import { problemsFromIssues } from "../lib/http/invalid_input.ts";
import { PAGE_SIZE } from "../lib/schemas.ts";
import { CHECKED_BEFORE_INPUT, PAGE_FIELD } from "./address_fields.ts";
import { AddressInputType, AddressPatchType } from "./address_types.ts";

/**
 * What an operation asks of the address book, checked with its variables before it runs: the
 * address inputs among the variables, and how many addresses its pages read together.
 */

type Variables = Readonly<Record<string, unknown>> | undefined;

/** A variable's value as sent (own members only: a name may be `constructor`). */
function variable(variables: Variables, name: string): unknown {
  return variables !== undefined && Object.hasOwn(variables, name) ? variables[name] : undefined;
}

const RULES = new Map<string, z.ZodType>([
  [AddressInputType.name, AddressInputSchema],
  [AddressPatchType.name, AddressPatchSchema],
]);

/**
 * The address rules (lib/address.ts) on the address inputs among an operation's variables, as
 * sent, before GraphQL coerces them: REST's problems for the same JSON, so a field missing, `null`
 * or not a string is `invalid-field` as it is over REST, where GraphQL's coercion would call it
 * an invalid variable. What the rules accept is then coerced as usual (a member the type lacks is
 * GraphQL's `invalid-parameter`; REST ignores it). A variable that is not an object is left to
 * the coercion too. None when an `id` or `ifMatch` argument is wrong: REST answers that first.
 */
export function variableInputProblems(
  plan: { operation: OperationDefinitionNode; fields: readonly FieldNode[] },
  variables: Variables,
): Problem[] {
  const problems: Problem[] = [];
  const inputs: [z.ZodType, object][] = [];
  for (const definition of plan.operation.variableDefinitions ?? []) {
    const type = definition.type.kind === Kind.NON_NULL_TYPE
      ? definition.type.type
      : definition.type;
    const rules = type.kind === Kind.NAMED_TYPE ? RULES.get(type.name.value) : undefined;
    const value = variable(variables, definition.variable.name.value);
    if (rules === undefined || typeof value !== "object" || value === null) continue;
    if (!Array.isArray(value)) inputs.push([rules, value]);
  }
  // No address input sent (every read): nothing to check, whatever the other arguments are.
  if (inputs.length === 0) return problems;
  // REST refuses a wrong path or header before it reads the body: execution answers that.
  if (argumentRefusedFirst(plan.fields, variables)) return problems;
  for (const [rules, value] of inputs) {
    const parsed = rules.safeParse(value);
    if (!parsed.success) problems.push(...problemsFromIssues("json", parsed.error.issues));
  }
  return problems;
}

/**
 * True when a root field has an argument REST checks before the address body (`id`, `ifMatch`)
 * that its rule refuses, literal or variable; one GraphQL cannot coerce (not a string or a
 * number) counts too, since coercion refuses it before anything runs.
 */
function argumentRefusedFirst(fields: readonly FieldNode[], variables: Variables): boolean {
  for (const field of fields) {
    for (const argument of field.arguments ?? []) {
      const rule = CHECKED_BEFORE_INPUT.get(argument.name.value);
      const node = argument.value;
      const value = node.kind === Kind.VARIABLE
        ? variable(variables, node.name.value)
        : node.kind === Kind.STRING || node.kind === Kind.INT
        ? node.value
        : node.kind === Kind.NULL
        ? null
        : {};
      if (rule === undefined || value === undefined || value === null) continue;
      if (typeof value !== "string" && typeof value !== "number") return true;
      try {
        rule(String(value));
      } catch {
        return true;
      }
    }
  }
  return false;
}

/**
 * The page size one `addresses` field asks for: a literal, a variable's value (or its default),
 * else the default page size. A value that is no integer is refused by GraphQL's coercion.
 */
function pageSizeOf(field: FieldNode, operation: OperationDefinitionNode, variables: Variables) {
  const value = field.arguments?.find((argument) => argument.name.value === "first")?.value;
  if (value?.kind === Kind.INT) return Number(value.value);
  if (value?.kind === Kind.VARIABLE) {
    const name = value.name.value;
    const sent = variable(variables, name);
    if (typeof sent === "number") return sent;
    const fallback = operation.variableDefinitions?.find((d) => d.variable.name.value === name)
      ?.defaultValue;
    if (sent === undefined && fallback?.kind === Kind.INT) return Number(fallback.value);
  }
  return PAGE_SIZE.default;
}

/**
 * One operation reads at most one REST page of addresses: its `addresses` fields (each alias
 * once) ask for at most PAGE_SIZE.max together. The cost limit cannot see this: it runs on the
 * document alone, and a page size sent as a variable is not in it. One field over the bound is
 * refused by the field itself, as REST refuses such a `limit`.
 */
export function pageBudgetProblem(
  plan: { operation: OperationDefinitionNode; fields: readonly FieldNode[] },
  variables: Variables,
): Problem | undefined {
  // One field at most (every operation but a few): within its own bound, which it checks itself.
  if (plan.fields.filter((field) => field.name.value === PAGE_FIELD).length <= 1) return undefined;
  const asked = new Map<string, number>();
  for (const field of plan.fields) {
    if (field.name.value !== PAGE_FIELD) continue;
    asked.set(field.alias?.value ?? field.name.value, pageSizeOf(field, plan.operation, variables));
  }
  const total = [...asked.values()].reduce((sum, size) => sum + size, 0);
  if (asked.size <= 1 || total <= PAGE_SIZE.max) return undefined;
  return {
    code: "invalid-parameter",
    detail: `The ${PAGE_FIELD} fields of one operation read at most ${PAGE_SIZE.max} addresses ` +
      `together (the sum of their first); this one asks for ${total}.`,
  };
}
