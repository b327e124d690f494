import { execute, GraphQLError, OperationTypeNode, subscribe } from "graphql";
import type { Context, Hono } from "hono";
import { type GraphqlConfig, loadConfig } from "../lib/config.ts";
import { AppError } from "../lib/errors.ts";
import type { Logger } from "../lib/log.ts";
import { allowedMethods } from "../security/route_access.ts";
import type { AppEnv } from "../lib/http/hono_env.ts";
import type { BookStore } from "../store/books.ts";
import type { AddressStore } from "../store/addresses/repository.ts";
import { type AccessRules, accessRules, authorize } from "../security/gate.ts";
import type { Admission } from "../security/admission.ts";
import { pageBudgetProblem, variableInputProblems } from "./operation_checks.ts";
import { schemaRoute } from "./schema_route.ts";
import { graphiqlAssetRoutes, graphiqlPage } from "./graphiql.ts";
import { limitError } from "./limits.ts";
import {
  acceptsHtml,
  assertJsonRequest,
  exceedsUtf8Bytes,
  graphqlBodyLimit,
  type GraphqlMediaType,
  negotiateGraphqlType,
  readBodyText,
  readParams,
} from "./over_http.ts";
import { createPreparer, type DocumentCache } from "./prepare.ts";
import {
  dataResponse,
  documentErrorsResponse,
  executionResponse,
  formattedResult,
  inputErrorsResponse,
  requestErrorResponse,
} from "./responses.ts";
import { createResultCache, type ResultCache } from "./result_cache.ts";
import { booksRoot, createSchema } from "./schema.ts";
import { declared, requires } from "../security/access.ts";
import { admit } from "../security/admission.ts";
import { GRAPHQL_PATH } from "../lib/paths.ts";
import type { AddressFeed } from "../store/addresses/feed.ts";
import { singleResultStream, subscriptionStream, wantsEventStream } from "./event_stream.ts";

/** What the GraphQL endpoint needs. */
interface GraphqlDeps {
  books: BookStore;
  addresses: AddressStore;
  logger: Logger;
  /**
   * The gate's access rules (security/gate.ts `accessRules`), applied per operation to what its
   * root fields need; authentication off when omitted.
   */
  access?: AccessRules;
  /** Limits and introspection; the `GRAPHQL_*` defaults when omitted. */
  config?: GraphqlConfig;
  /** Parsed and validated documents by query text (a new cache when omitted). */
  documents?: DocumentCache;
  /** Encoded results of variable-free operations (a new cache when omitted). */
  results?: ResultCache;
  /** Live updates for subscriptions (none served when omitted). */
  feed?: AddressFeed | undefined;
  /** A comment line this often keeps an idle subscription's stream open (`EVENTS_HEARTBEAT`). */
  heartbeatMs?: number | undefined;
}

/**
 * Serves GraphQL at `/graphql`: operations over POST (GraphQL-over-HTTP), GraphiQL for a browser's
 * GET, GraphiQL's files under `/graphql/assets/` and the schema at `/graphql/schema.graphql`.
 *
 * Every operation takes this one path. A request costs, in order: Accept and Content-Type checks,
 * reading the body, then a cached result when this very body text was answered from the cache
 * before (no JSON parse), else parsing the JSON body, the document size check, then either a
 * cached result (variable-free operations of the catalogue alone, per catalogue snapshot:
 * result_cache.ts) or a cached parse-and-validate with the operation planned (prepare.ts), its further writes charged
 * to the rate limit, the access its root fields need (operation_access.ts), what it asks of the
 * address book (operation_checks.ts), and execution: interpreted the first time, compiled after
 * (execute.ts).
 *
 * Access: the gate at the entry identifies the caller and charges the rate limit for the route
 * (declared public); what a call needs depends on its operation's root fields, so the route asks
 * the gate's own rule (`authorize`) for each before the operation runs, and the gate charges
 * each write beyond the first (`charge`) before any runs. Only when the caller
 * lacks what even the books need (no token, `AUTH_BOOKS=required`) is it refused before the body
 * is read: every operation needs at least that.
 *
 * Why not `@hono/graphql-server` in the request path: it parses and validates every request
 * (no hook to reuse a cached document, which keeps repeated queries cheap), matches
 * `Content-Type` exactly (so `application/json; charset=utf-8` reads as an empty body), never
 * answers `application/graphql-response+json`, answers 400 for validation errors under
 * `application/json` and 500 for a response without data (GraphQL-over-HTTP says 200),
 * executes queries sent by GET, and its GraphiQL page loads everything from a CDN. Each of
 * those is a requirement here, so the endpoint is built on graphql-js directly (parse, validate,
 * execute) and graphql-jit, with graphql-armor's rules for the limits; the package stays unused.
 */
export function graphqlRoutes(app: Hono<AppEnv>, deps: GraphqlDeps): void {
  const config = deps.config ?? loadConfig({}).graphql;
  const access = deps.access ?? accessRules(undefined);
  const schema = createSchema();
  const prepare = createPreparer(schema, config, deps.documents);
  const results = deps.results ?? createResultCache();
  const bodyLimit = graphqlBodyLimit(config);

  // The gate's refusal of an operation is a GraphQL response with the error's code.
  const refuse = (c: Context, error: AppError) =>
    requestErrorResponse(error, negotiateGraphqlType(c.req.header("accept")) ?? "application/json");

  const streamOptions = { heartbeatMs: deps.heartbeatMs ?? 15_000, maxQueuedBytes: 256 * 1024 };

  // With `Accept: text/event-stream` (GraphQL over Server-Sent Events, graphql/event_stream.ts)
  // every answer is a stream: a subscription's results, or the one result of anything else.
  // One handler that is its own declaration (security/access.ts `declared`): Hono calls it
  // without composing a middleware chain, and it admits the request as `requires` would.
  const post = (c: Context<AppEnv>): Promise<Response> => {
    admit(c);
    const streaming = wantsEventStream(c.req.header("accept"));
    if (!streaming) return answerOf(c, false);
    return answerOf(c, true).then((answer) =>
      answer.headers.get("content-type")?.startsWith("text/event-stream")
        ? answer
        : singleResultStream(answer, c.get("requestId"))
    );
  };
  app.post(GRAPHQL_PATH, declared(post, "public", refuse));

  async function answerOf(c: Context<AppEnv>, streaming: boolean): Promise<Response> {
    const caller = c.get("caller");
    const noBooks = authorize(caller, "books:read", access);
    if (noBooks?.code === "unauthorized") return refuse(c, noBooks);
    const accept = c.req.header("accept");
    // A stream's results are JSON texts as `application/json` answers them.
    const negotiated = streaming ? "application/json" : negotiateGraphqlType(accept);
    const type: GraphqlMediaType = negotiated ?? "application/json";
    try {
      if (negotiated === undefined) {
        throw new AppError(
          "not-acceptable",
          `Responses are application/json or application/graphql-response+json; Accept was ${
            accept?.slice(0, 100)
          }.`,
        );
      }
      assertJsonRequest(c.req.header("content-type"));
      const text = await readBodyText(c.req.raw, bodyLimit);
      // One snapshot per request: every field of this request reads the same catalogue.
      const catalogue = deps.books.list();
      // A body answered from the cache before: same text, same parameters, same checks passed.
      const known = results.keyOfBody(text);
      const hit = known === undefined ? undefined : results.get(known, catalogue);
      if (hit !== undefined) return cachedAnswer(c, hit, type, noBooks);
      const params = readParams(text);
      if (exceedsUtf8Bytes(params.query, config.maxDocumentBytes)) {
        const error = limitError(
          "document-size",
          `The query document is larger than ${config.maxDocumentBytes} bytes`,
        );
        return documentErrorsResponse([error], type, 413);
      }
      const key = results.keyOf(params);
      const cached = key === undefined ? undefined : results.get(key, catalogue);
      if (cached !== undefined) return cachedAnswer(c, cached, type, noBooks);
      const prepared = prepare(params.query);
      if (!prepared.ok) {
        logRejection(deps.logger, c.get("requestId"), prepared.errors);
        return documentErrorsResponse(prepared.errors, type);
      }
      const root = booksRoot(catalogue);
      const context = { owner: caller.owner, addresses: deps.addresses };
      const operation = prepared.operation(params.operationName);
      if (operation === undefined) {
        // No operation to run (an unknown or missing operationName): graphql-js says which.
        const result = await execute({
          schema,
          document: prepared.document,
          operationName: params.operationName,
        });
        return executionResponse(result, responseContext(c, type, deps.logger));
      }
      const { plan } = operation;
      // Each write is one call, as a REST or gRPC write is: the entry charged the first, the
      // gate charges the rest, all or none, before anything runs.
      const decision = (c.env as Admission | undefined)?.decision;
      if (plan.writes > 1 && decision?.ok && decision.charge !== undefined) {
        const refusal = decision.charge(plan.writes);
        if (refusal !== undefined) return refuse(c, refusal);
      }
      for (const needed of plan.accesses) {
        const refusal = authorize(caller, needed, access);
        if (refusal !== undefined) return refuse(c, refusal);
      }
      if (!plan.catalogueOnly) {
        const problems = variableInputProblems(plan, params.variables);
        const pages = pageBudgetProblem(plan, params.variables);
        if (pages !== undefined) problems.push(pages);
        if (problems.length > 0) return inputErrorsResponse(problems, type);
      }
      if (plan.operation.operation === OperationTypeNode.SUBSCRIPTION) {
        if (!streaming) {
          throw new AppError(
            "not-acceptable",
            "A subscription is answered as a stream of events: send it with Accept: " +
              "text/event-stream (GraphQL over Server-Sent Events).",
          );
        }
        const rc = responseContext(c, type, deps.logger);
        const subscribed = await subscribe({
          schema,
          document: prepared.document,
          rootValue: root,
          contextValue: {
            ...context,
            caller: caller.subject ?? caller.owner,
            expiresAt: caller.expiresAt,
            signal: c.req.raw.signal,
            feed: deps.feed,
          },
          variableValues: params.variables,
          operationName: params.operationName,
        });
        if (!(Symbol.asyncIterator in subscribed)) return executionResponse(subscribed, rc);
        const failure = (error: unknown) =>
          formattedResult({
            data: null,
            errors: [
              new GraphQLError(error instanceof Error ? error.message : String(error), {
                originalError: error instanceof Error ? error : undefined,
              }),
            ],
          }, rc);
        return subscriptionStream(
          subscribed,
          (result) => formattedResult(result, rc),
          failure,
          c.get("requestId"),
          streamOptions,
        );
      }
      const result = await operation.run(root, context, params.variables);
      if (result.errors === undefined) {
        const body = JSON.stringify({ data: result.data });
        if (key !== undefined && plan.catalogueOnly) results.set(key, catalogue, body, text);
        return dataResponse(body, type, c.get("requestId"));
      }
      return executionResponse(result, responseContext(c, type, deps.logger));
    } catch (error) {
      if (error instanceof AppError) return requestErrorResponse(error, type);
      throw error;
    }
  }

  // Only operations of the catalogue alone are cached, and they need what the books need.
  function cachedAnswer(
    c: Context<AppEnv>,
    body: string,
    type: GraphqlMediaType,
    noBooks: AppError | undefined,
  ): Response {
    if (noBooks !== undefined) return refuse(c, noBooks);
    return dataResponse(body, type, c.get("requestId"));
  }

  app.get(GRAPHQL_PATH, requires("public"), (c) => {
    if (new URL(c.req.url).searchParams.has("query")) {
      return requestErrorResponse(
        new AppError(
          "method-not-allowed",
          "GraphQL operations are accepted over POST only (Content-Type: application/json).",
          { headers: { allow: allowedMethods(app.router, GRAPHQL_PATH).join(", ") } },
        ),
        "application/json",
      );
    }
    if (acceptsHtml(c.req.header("accept"))) return graphiqlPage();
    return requestErrorResponse(
      new AppError(
        "not-acceptable",
        "GET /graphql serves GraphiQL to browsers (Accept: text/html); send GraphQL operations " +
          "with POST and Content-Type: application/json.",
      ),
      "application/json",
    );
  });

  schemaRoute(app, schema, config);
  graphiqlAssetRoutes(app);
}

/** What rendering an execution's errors needs of the request. */
function responseContext(c: Context<AppEnv>, type: GraphqlMediaType, logger: Logger) {
  return { type, requestId: c.get("requestId"), logger };
}

/** Limit rejections are worth a warning (someone may be probing); the query is not logged. */
function logRejection(
  logger: Logger,
  requestId: string,
  errors: readonly { extensions?: Record<string, unknown> }[],
) {
  const limits = errors.map((e) => e.extensions?.limit).filter((l) => l !== undefined);
  if (limits.length > 0) logger.warn("graphql limit exceeded", { requestId, limits });
}
