import {
  type ASTVisitor,
  type DocumentNode,
  getOperationAST,
  GraphQLError,
  type GraphQLSchema,
  NoSchemaIntrospectionCustomRule,
  type OperationDefinitionNode,
  OperationTypeNode,
  specifiedRules,
  validate,
  type ValidationContext,
  type ValidationRule,
} from "graphql";
import { stringBytes } from "../lib/cache_bytes.ts";
import type { GraphqlConfig } from "../lib/config.ts";
import { compiled, interpreted, type Run } from "./execute.ts";
import { limitRules, parseWithTokenLimit } from "./limits.ts";
import { type OperationPlan, planOf } from "./operation_access.ts";
import { createLru, type Lru } from "./lru.ts";

/** An operation of a prepared document: what it needs, and how it runs. */
export interface PreparedOperation {
  plan: OperationPlan;
  run: Run;
}

/** A query text after parsing and validation: a document to execute, or the errors to report. */
type Prepared =
  | {
    ok: true;
    document: DocumentNode;
    /** The operation `operationName` selects (GraphQL's rule), or undefined when none. */
    operation(operationName: string | undefined): PreparedOperation | undefined;
  }
  | { ok: false; errors: readonly GraphQLError[] };

/**
 * Runs after which an operation is compiled (graphql/execute.ts): its first run is interpreted,
 * so a document seen once (most of what a hostile or exploring client sends) costs no compile.
 */
const COMPILE_AT_RUN = 2;

/** Cache bounds: entries, and the bytes all cached documents hold. */
interface PrepareCacheOptions {
  maxEntries?: number;
  maxBytes?: number;
}

/** Prepared documents by query text, weighed in bytes. */
export type DocumentCache = Lru<Prepared>;

const DEFAULT_CACHE = { maxEntries: 1000, maxBytes: 4 * 1024 * 1024 };

// A cached document holds its text (the key, which the AST's source shares), an AST that grows
// with its tokens, the compiled operation once it runs again (graphql-jit's generated code), and
// the entry itself. Estimates on the high side: the typed `Addresses` document (about 70
// tokens) holds 18 KB of AST and 9 KB of compiled code on V8's heap.
const BYTES_PER_TOKEN = 384;
const BYTES_PER_ENTRY = 1536;

/**
 * The document cache: an LRU bounded by entries and by bytes, the text included. Counting
 * tokens alone would let a document padded with whitespace (few tokens, 64 KiB of text) weigh
 * almost nothing, so unique padded queries could grow memory by their text unbounded.
 */
export function createDocumentCache(options: PrepareCacheOptions = {}): DocumentCache {
  return createLru<Prepared>(
    options.maxEntries ?? DEFAULT_CACHE.maxEntries,
    options.maxBytes ?? DEFAULT_CACHE.maxBytes,
  );
}

/**
 * Returns a function that turns query text into a validated document, cached by text: a repeated
 * query skips parsing and both validation passes and costs a map lookup. Rejections are cached
 * too, so repeating a bad query is as cheap as repeating a good one. The cache is bounded by
 * entries and bytes, so unique queries from a hostile client cannot grow memory.
 */
export function createPreparer(
  schema: GraphQLSchema,
  config: GraphqlConfig,
  cache: DocumentCache = createDocumentCache(),
): (query: string) => Prepared {
  const limits = limitRules(config);
  const rules: ValidationRule[] = [...specifiedRules, knownOperationTypesRule];
  if (!config.introspection) rules.push(NoSchemaIntrospectionCustomRule);

  function prepareUncached(query: string): { prepared: Prepared; tokens: number } {
    let parsed;
    try {
      parsed = parseWithTokenLimit(query, config.maxTokens);
    } catch (error) {
      if (!(error instanceof GraphQLError)) throw error;
      // The tokens read before the failure built no AST: the entry holds the text and an error.
      return { prepared: { ok: false, errors: [error] }, tokens: 0 };
    }
    const { document, tokens } = parsed;
    const limitErrors = validate(schema, document, limits);
    if (limitErrors.length > 0) return { prepared: { ok: false, errors: limitErrors }, tokens };
    const errors = validate(schema, document, rules);
    if (errors.length > 0) {
      return {
        prepared: {
          ok: false,
          errors: config.introspection ? errors : errors.map(hideSuggestions),
        },
        tokens,
      };
    }
    return { prepared: { ok: true, document, operation: operations(schema, document) }, tokens };
  }

  return (query) => {
    const hit = cache.get(query);
    if (hit !== undefined) return hit;
    const { prepared, tokens } = prepareUncached(query);
    cache.set(query, prepared, BYTES_PER_ENTRY + stringBytes(query) + tokens * BYTES_PER_TOKEN);
    return prepared;
  };
}

/**
 * The operations of a validated document, each planned once (operation_access.ts) and run
 * interpreted, then compiled from its COMPILE_AT_RUN-th run on. Only operations the document
 * defines are kept, so whatever `operationName` a client sends, the entry holds at most one per
 * operation (its weight counts the document's tokens, which bound them).
 */
function operations(schema: GraphQLSchema, document: DocumentNode) {
  const known = new Map<OperationDefinitionNode, PreparedOperation & { runs: number }>();
  return (operationName: string | undefined): PreparedOperation | undefined => {
    const definition = getOperationAST(document, operationName);
    if (!definition) return undefined;
    let operation = known.get(definition);
    if (operation === undefined) {
      const plan = planOf(document, definition);
      operation = { plan, run: interpreted(schema, document, operationName), runs: 0 };
      known.set(definition, operation);
    } else if (++operation.runs === COMPILE_AT_RUN - 1) {
      operation.run = compiled(schema, document, definition) ?? operation.run;
    }
    return operation;
  };
}

/**
 * The GraphQL specification's "operation type existence" check, which graphql-js 16 leaves to
 * execution (where an operation type the schema lacks fails as if the server had): this schema
 * has queries and mutations, so a subscription is the client's error and is rejected before
 * execution.
 */
function knownOperationTypesRule(context: ValidationContext): ASTVisitor {
  return {
    OperationDefinition(node) {
      const schema = context.getSchema();
      if (schema.getRootType(node.operation)) return;
      const defined = Object.values(OperationTypeNode)
        .filter((operation) => schema.getRootType(operation));
      context.reportError(
        new GraphQLError(
          `The schema defines no ${node.operation} type; operations are ${
            defined.join(" and ")
          } operations only.`,
          { nodes: node },
        ),
      );
    },
  };
}

/**
 * With introspection off, "Did you mean …?" suggestions would still reveal field and type
 * names; drop them.
 */
function hideSuggestions(error: GraphQLError): GraphQLError {
  const message = error.message.replace(/ Did you mean .*\?$/, "");
  if (message === error.message) return error;
  return new GraphQLError(message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: error.extensions,
  });
}
