import type { ExecutionResult } from "graphql";
import { acceptance } from "../lib/http/accept.ts";

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
const encoder = new TextEncoder();

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

function headers(requestId: string): HeadersInit {
  return {
    "content-type": `${TYPE}; charset=utf-8`,
    "cache-control": "no-store, no-transform",
    "x-accel-buffering": "no",
    "x-request-id": requestId,
  };
}

function next(body: string): string {
  return `event: next\ndata: ${body}\n\n`;
}

/** One GraphQL response (a JSON body) as a stream of one result. */
export async function singleResultStream(json: Response, requestId: string): Promise<Response> {
  const body = await json.text();
  return new Response(next(body) + COMPLETE, { status: 200, headers: headers(requestId) });
}

/** How a subscription's stream is paced. */
export interface StreamOptions {
  /** A comment line this often keeps proxies from cutting an idle stream. */
  heartbeatMs: number;
  /** Bytes queued for a client that does not read before its stream completes. */
  maxQueuedBytes: number;
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
  options: StreamOptions,
): Response {
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let open = true;
  const stop = () => {
    open = false;
    clearInterval(heartbeat);
    void results.return(undefined).catch(() => {});
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (text: string) => {
        if (open) controller.enqueue(encoder.encode(text));
        return open;
      };
      heartbeat = setInterval(() => send(": keep-alive\n\n"), options.heartbeatMs);
      void (async () => {
        try {
          for await (const result of results) {
            if (!send(next(JSON.stringify(format(result))))) return;
            if ((controller.desiredSize ?? 1) <= 0) break; // a slow reader
          }
        } catch (error) {
          send(next(JSON.stringify(failure(error))));
        }
        if (!open) return;
        send(COMPLETE);
        stop();
        controller.close();
      })();
    },
    cancel() {
      stop();
    },
  }, new ByteLengthQueuingStrategy({ highWaterMark: options.maxQueuedBytes }));
  return new Response(body, { status: 200, headers: headers(requestId) });
}
