import { type CostLimitOptions, costLimitRule } from "@escape.tech/graphql-armor-cost-limit";
import { maxAliasesRule } from "@escape.tech/graphql-armor-max-aliases";
import { maxDepthRule } from "@escape.tech/graphql-armor-max-depth";
import { maxDirectivesRule } from "@escape.tech/graphql-armor-max-directives";
import { MaxTokensParserWLexer } from "@escape.tech/graphql-armor-max-tokens";
import {
  type ASTVisitor,
  type DocumentNode,
  type FragmentDefinitionNode,
  GraphQLError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  validate,
  type ValidationContext,
  type ValidationRule,
  visit,
} from "graphql";
import type { GraphqlConfig } from "../lib/config.ts";
import { PAGE_FIELD } from "./address_fields.ts";
import { rootFieldsOf, writesOf } from "./operation_access.ts";

/** The limits a document must stay within before anything else is done with it. */
type GraphqlLimit =
  | "document-size"
  | "tokens"
  | "depth"
  | "aliases"
  | "directives"
  | "cost"
  | "mutations";

/** The environment variable that sets each limit, named in every rejection. */
const LIMIT_VARIABLE: Readonly<Record<GraphqlLimit, string>> = {
  "document-size": "GRAPHQL_MAX_DOCUMENT_BYTES",
  "tokens": "GRAPHQL_MAX_TOKENS",
  "depth": "GRAPHQL_MAX_DEPTH",
  "aliases": "GRAPHQL_MAX_ALIASES",
  "directives": "GRAPHQL_MAX_DIRECTIVES",
  "cost": "GRAPHQL_MAX_COST",
  "mutations": "GRAPHQL_MAX_MUTATIONS",
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
    costRule({ ...common, maxCost: config.maxCost, onReject: reportAs("cost") }),
    maxMutationsRule(config.maxMutations),
  ];
}

/**
 * The cost of every operation of a document, by the rule `limitRules` applies (for tests, and
 * for the figures docs/graphql.md gives).
 */
export function documentCosts(schema: GraphQLSchema, document: DocumentNode): number[] {
  const costs: number[] = [];
  const onAccept = [(_: unknown, { n }: { n: number }) => void costs.push(Math.ceil(n))];
  validate(schema, document, [costRule({ maxCost: Infinity, onAccept })]);
  return costs;
}

/**
 * graphql-armor's cost rule, blind to page sizes: it multiplies the cost of a field's selection
 * by a literal `first` but cannot see one sent as a variable, so `addresses(first: 50)` would cost
 * fifty times `addresses(first: $n)` with n = 50. Here a page's selection counts once whichever
 * way its size is written, and how many addresses an operation reads is bounded apart, by the
 * page budget checked with the variables (graphql/operation_checks.ts): at most one REST page of
 * the largest size. Armor's rule runs on a view of each operation and fragment without the page
 * fields' `first`; everything else is its formula.
 */
function costRule(options: CostLimitOptions): ValidationRule {
  const armor = costLimitRule(options);
  return (context) => {
    const blind = new Map<string, FragmentDefinitionNode | null>();
    const view: ValidationContext = Object.create(context, {
      getFragment: {
        value(name: string) {
          if (!blind.has(name)) {
            const fragment = context.getFragment(name);
            blind.set(name, fragment ? withoutPageSizes(fragment) : null);
          }
          return blind.get(name) ?? undefined;
        },
      },
    });
    const visitor = armor(view);
    return {
      OperationDefinition(node) {
        visitor.onOperationDefinitionEnter(withoutPageSizes(node));
      },
    };
  };
}

/** `node` with no `first` argument on the page fields. */
function withoutPageSizes<T extends OperationDefinitionNode | FragmentDefinitionNode>(node: T): T {
  return visit(node, {
    Field(field) {
      if (field.name.value !== PAGE_FIELD) return undefined;
      const kept = field.arguments?.filter((argument) => argument.name.value !== "first");
      return kept?.length === field.arguments?.length ? undefined : { ...field, arguments: kept };
    },
  });
}

/**
 * At most `max` writes (mutation fields, by response key) per operation: each is one call against
 * the rate limit, charged before any runs (graphql/routes.ts), and the cap keeps what one request
 * can ask of the store small. Counted as the route charges (graphql/operation_access.ts
 * `writesOf`), through fragments and whatever `@skip` says.
 */
function maxMutationsRule(max: number): ValidationRule {
  return (context): ASTVisitor => ({
    OperationDefinition(node) {
      const fields = rootFieldsOf(node, (name) => context.getFragment(name));
      const writes = writesOf(node, fields);
      if (writes <= max) return;
      context.reportError(
        limitError("mutations", `Mutation fields limit of ${max} exceeded, found ${writes}`),
      );
    },
  });
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
