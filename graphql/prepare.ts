import {
  type ASTVisitor,
  type DocumentNode,
  GraphQLError,
  type GraphQLSchema,
  NoSchemaIntrospectionCustomRule,
  OperationTypeNode,
  specifiedRules,
  validate,
  type ValidationContext,
  type ValidationRule,
} from "graphql";
import { stringBytes } from "../lib/cache_bytes.ts";
import type { GraphqlConfig } from "../lib/config.ts";
import { limitRules, parseWithTokenLimit } from "./limits.ts";
import { createLru, type Lru } from "./lru.ts";

/** A query text after parsing and validation: a document to execute, or the errors to report. */
type Prepared =
  | { ok: true; document: DocumentNode }
  | { ok: false; errors: readonly GraphQLError[] };

/** Cache bounds: entries, and the bytes all cached documents hold. */
interface PrepareCacheOptions {
  maxEntries?: number;
  maxBytes?: number;
}

/** Prepared documents by query text, weighed in bytes. */
export type DocumentCache = Lru<Prepared>;

const DEFAULT_CACHE = { maxEntries: 1000, maxBytes: 4 * 1024 * 1024 };

// A cached document holds its text (the key, which the AST's source shares), an AST that grows
// with its tokens, and validation results and the entry itself. Estimates on the high side.
const BYTES_PER_TOKEN = 256;
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
    return { prepared: { ok: true, document }, tokens };
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
