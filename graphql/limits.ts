import { costLimitRule } from "@escape.tech/graphql-armor-cost-limit";
import { maxAliasesRule } from "@escape.tech/graphql-armor-max-aliases";
import { maxDepthRule } from "@escape.tech/graphql-armor-max-depth";
import { maxDirectivesRule } from "@escape.tech/graphql-armor-max-directives";
import { MaxTokensParserWLexer } from "@escape.tech/graphql-armor-max-tokens";
import {
  type DocumentNode,
  GraphQLError,
  type ValidationContext,
  type ValidationRule,
} from "graphql";
import type { GraphqlConfig } from "../lib/config.ts";

/** The limits a document must stay within before anything else is done with it. */
type GraphqlLimit = "document-size" | "tokens" | "depth" | "aliases" | "directives" | "cost";

/** The environment variable that sets each limit, named in every rejection. */
const LIMIT_VARIABLE: Readonly<Record<GraphqlLimit, string>> = {
  "document-size": "GRAPHQL_MAX_DOCUMENT_BYTES",
  "tokens": "GRAPHQL_MAX_TOKENS",
  "depth": "GRAPHQL_MAX_DEPTH",
  "aliases": "GRAPHQL_MAX_ALIASES",
  "directives": "GRAPHQL_MAX_DIRECTIVES",
  "cost": "GRAPHQL_MAX_COST",
};

/**
 * A rejection for a limit. The code is `payload-too-large`, the error model's code for a request
 * over a size limit; `extensions.limit` says which limit, so clients can tell them apart.
 */
export function limitError(limit: GraphqlLimit, text: string): GraphQLError {
  return new GraphQLError(`${text} (limit set by ${LIMIT_VARIABLE[limit]}).`, {
    extensions: { code: "payload-too-large", limit },
  });
}

/**
 * graphql-armor prefixes every rejection with "Syntax Error: " (it is not one), ends it with a
 * period and reports a cost as a float.
 */
function armorText(error: GraphQLError): string {
  return error.message.replace(/^Syntax Error: /, "").replace(/\.$/, "")
    .replace(/found (\d+\.\d+)$/, (_, n: string) => `found ${Math.ceil(Number(n))}`);
}

/** Reports an armor rejection as a validation error instead of letting the rule throw. */
function reportAs(limit: GraphqlLimit) {
  return [(context: ValidationContext | null, error: GraphQLError) => {
    context?.reportError(limitError(limit, armorText(error)));
  }];
}

/**
 * The structural limits as validation rules (graphql-armor's maintained rules). They run in a
 * pass of their own before the GraphQL specification's rules, because some of those (overlapping
 * fields) cost time quadratic in the number of selections, which is exactly what these limits
 * bound.
 * Introspection through `__schema` is exempt from depth and cost (armor's default), so GraphiQL's
 * schema query passes; `__type` is not exempt, and every alias counts (`__typename` too).
 */
export function limitRules(config: GraphqlConfig): ValidationRule[] {
  const common = { exposeLimits: true, propagateOnRejection: false };
  return [
    maxDepthRule({ ...common, n: config.maxDepth, onReject: reportAs("depth") }),
    // armor exempts `__typename` aliases by default; each one still costs a result field.
    maxAliasesRule({
      ...common,
      n: config.maxAliases,
      allowList: [],
      onReject: reportAs("aliases"),
    }),
    maxDirectivesRule({ ...common, n: config.maxDirectives, onReject: reportAs("directives") }),
    costLimitRule({ ...common, maxCost: config.maxCost, onReject: reportAs("cost") }),
  ];
}

/** A parsed document and how many tokens it has (the weight of its cache entry). */
interface ParsedDocument {
  document: DocumentNode;
  tokens: number;
}

/**
 * Parses with graphql-armor's token-counting parser, which stops at the token limit instead of
 * building a huge AST first. Throws a GraphQLError on a syntax error or over the limit.
 */
export function parseWithTokenLimit(query: string, maxTokens: number): ParsedDocument {
  const parser = new MaxTokensParserWLexer(query, {
    n: maxTokens,
    exposeLimits: true,
    propagateOnRejection: false,
    onReject: [(_context, error) => {
      throw limitError("tokens", armorText(error));
    }],
  });
  const document = parser.parseDocument();
  return { document, tokens: parser.tokenCount };
}
