import type { ExecutionResult } from "graphql";
import { acceptance } from "../lib/http/accept.ts";
import {
  eventStreamBody,
  eventStreamHeaders,
  type EventStreamPace,
} from "../lib/http/event_stream.ts";

/**
 * GraphQL over Server-Sent Events, "distinct connections" mode (the protocol of the `graphql-sse`
 * package, whose client works unchanged): `POST /graphql` with `Accept: text/event-stream` is
 * answered 200 `text/event-stream`, each result an `event: next` with the result as `data:`,
 * then one `event: complete`. A subscription streams a result per event; any other operation,
 * and every refusal, is one result then `complete` (refusals as GraphQL errors with their codes,
 * as graphql-sse reports validation errors).
 */

const TYPE = "text/event-stream";
const GRAPHQL_JSON = "application/graphql-response+json";
const COMPLETE = "event: complete\ndata:\n\n";

/**
 * True when `Accept` names `text/event-stream` (what an SSE client sends) and prefers it: a
 * header naming JSON too at the same q keeps the JSON answer.
 */
export function wantsEventStream(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const stream = acceptance(accept, TYPE);
  if (stream.q === 0 || stream.specificity < 2) return false;
  const json = [acceptance(accept, "application/json"), acceptance(accept, GRAPHQL_JSON)];
  return json.every((j) => j.specificity < 2 || j.q < stream.q);
}

function next(body: string): string {
  return `event: next\ndata: ${body}\n\n`;
}

/** One GraphQL response (a JSON body) as a stream of one result. */
export async function singleResultStream(json: Response, requestId: string): Promise<Response> {
  const body = await json.text();
  return new Response(next(body) + COMPLETE, {
    status: 200,
    headers: eventStreamHeaders(requestId),
  });
}

/**
 * A subscription's results as events, `format`ted as the JSON endpoint formats a result. The
 * stream completes when the results end (the feed ended it: the token's expiry, shutdown), when
 * they fail (one last result with the error), or when the client stops reading (past
 * `maxQueuedBytes`); the client subscribes again with the last cursor it got.
 */
export function subscriptionStream(
  results: AsyncGenerator<ExecutionResult>,
  format: (result: ExecutionResult) => unknown,
  failure: (error: unknown) => unknown,
  requestId: string,
  pace: EventStreamPace,
): Response {
  async function* events() {
    for await (const result of results) yield next(JSON.stringify(format(result)));
  }
  const body = eventStreamBody(events(), pace, {
    last: COMPLETE,
    failed: (error) => next(JSON.stringify(failure(error))),
    stop: () => void results.return(undefined).catch(() => {}),
  });
  return new Response(body, { status: 200, headers: eventStreamHeaders(requestId) });
}
