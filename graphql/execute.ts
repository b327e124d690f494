import {
  type ArgumentNode,
  BREAK,
  type DirectiveNode,
  type DocumentNode,
  execute,
  type ExecutionResult,
  type GraphQLSchema,
  Kind,
  type OperationDefinitionNode,
  OperationTypeNode,
  type ValueNode,
  visit,
} from "graphql";
import { compileQuery, isCompiledQuery } from "graphql-jit";

type Vars = Readonly<Record<string, unknown>> | undefined;

/** Runs one operation of a validated document for a request. */
export type Run = (
  root: unknown,
  context: unknown,
  variables: Vars,
) => ExecutionResult | Promise<ExecutionResult>;

/**
 * graphql-js's `execute` for the operation `operationName` selects: what runs an operation the
 * first time it is seen, and every operation graphql-jit does not take.
 */
export function interpreted(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | undefined,
): Run {
  return (rootValue, contextValue, variableValues) =>
    execute({ schema, document, rootValue, contextValue, variableValues, operationName });
}

/**
 * The operation compiled by graphql-jit into one function, or undefined when it is not to be.
 *
 * Why: graphql-js interprets the document on every execution, field by field (argument values,
 * resolve info, path objects, type checks for each of a page's 50 × 5 fields); graphql-jit
 * generates the function that executes this one operation once, so a repeated operation costs
 * its resolvers and little else (docs/bench.md, "Profile summary: GraphQL").
 *
 * Not compiled, and left to graphql-js: an operation graphql-jit would answer otherwise
 * (`interpretedOnly`). tests/graphql/graphql_executors_test.ts runs the same operations through
 * both executors and requires the same answers.
 */
export function compiled(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
): Run | undefined {
  if (interpretedOnly(operation, document)) return undefined;
  const query = compileQuery(schema, document, operation.name?.value, {
    // A resolver's error keeps its own stack (logged when it is not an AppError); no stack is
    // captured for GraphQL's own null and type errors, which are the client's.
    disablingCapturingStackErrors: true,
    useExperimentalPathBasedSkipInclude: true,
  });
  if (!isCompiledQuery(query)) return undefined;
  const js = interpreted(schema, document, operation.name?.value);
  const isQuery = operation.operation === OperationTypeNode.QUERY;
  // An answer without data is a request error: variables that do not coerce, found before
  // anything ran. graphql-js words those, so that a request gets the same answer on its first
  // (interpreted) run and on every later one.
  const checked = (result: ExecutionResult, root: unknown, context: unknown, variables: Vars) =>
    result.data === undefined ? js(root, context, variables) : result;
  return (root, context, variables) => {
    // graphql-jit reads a field without a resolver of its own inline, so a getter that throws
    // there escapes the whole operation where graphql-js nulls that one field. A query is then
    // answered by graphql-js, which reads the same data again; a mutation's fields all have
    // resolvers, whose errors graphql-jit reports per field, so a mutation never runs twice.
    const rerun = (error: unknown) => {
      if (!isQuery) throw error;
      return js(root, context, variables);
    };
    try {
      const result = query.query(root, context, variables);
      return result instanceof Promise
        ? result.then((r) => checked(r, root, context, variables), rerun)
        : checked(result, root, context, variables);
    } catch (error) {
      return rerun(error);
    }
  };
}

/**
 * True when graphql-jit is known to answer the operation otherwise than graphql-js
 * (tests/graphql/graphql_executors_test.ts finds such differences): a variable inside a list or
 * input object literal of an argument (graphql-jit issue 230: an absent one becomes null), or a
 * variable as a directive's argument (`@include(if: $flag)` with `flag` null is a field error in
 * graphql-js and skips the field in graphql-jit). In the operation or in any fragment of the
 * document (one it may spread).
 */
function interpretedOnly(operation: OperationDefinitionNode, document: DocumentNode): boolean {
  let found = false;
  const check = {
    Argument(argument: ArgumentNode) {
      if (!nested(argument.value, false)) return undefined;
      found = true;
      return BREAK;
    },
    Directive(directive: DirectiveNode) {
      if (!directive.arguments?.some((argument) => nested(argument.value, true))) {
        return undefined;
      }
      found = true;
      return BREAK;
    },
  };
  visit(operation, check);
  for (const definition of document.definitions) {
    if (found) break;
    if (definition.kind === Kind.FRAGMENT_DEFINITION) visit(definition, check);
  }
  return found;
}

function nested(value: ValueNode, inside: boolean): boolean {
  switch (value.kind) {
    case Kind.VARIABLE:
      return inside;
    case Kind.LIST:
      return value.values.some((item) => nested(item, true));
    case Kind.OBJECT:
      return value.fields.some((field) => nested(field.value, true));
    default:
      return false;
  }
}
