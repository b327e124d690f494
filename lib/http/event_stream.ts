/**
 * A Server-Sent Events response body, as REST's `GET /addresses/events` and GraphQL's
 * subscriptions send them: the events as their source yields them, a comment line every
 * heartbeat so proxies do not cut an idle stream, and a bounded queue: a client that stops
 * reading has its stream ended after what is queued (it resumes from the last event it got), so
 * the server holds no backlog.
 */

const encoder = new TextEncoder();

/** How a stream is paced. */
export interface EventStreamPace {
  /** A comment line this often keeps proxies from cutting an idle stream. */
  heartbeatMs: number;
  /** Bytes queued for a client that does not read before its stream ends. */
  maxQueuedBytes: number;
}

/** What a stream sends besides its events, and what ends its source. */
interface EventStreamEnds {
  /** Sent before the first event. */
  first?: string;
  /** Sent last, when the source ends, fails or the client stops reading (not when it left). */
  last?: string;
  /** What to send when the source fails (nothing: it just ends). */
  failed?: (error: unknown) => string | undefined;
  /** Ends the source: the stream ended, or the client went away. */
  stop(): void;
}

/** The headers of an event stream; proxies neither buffer nor transform it. */
export function eventStreamHeaders(requestId: string): Record<string, string> {
  return {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-store, no-transform",
    "x-accel-buffering": "no",
    "x-request-id": requestId,
  };
}

/** The body: `events` (each a whole event's text or bytes), paced and bounded. */
export function eventStreamBody(
  events: AsyncIterable<string | Uint8Array>,
  pace: EventStreamPace,
  ends: EventStreamEnds,
): ReadableStream<Uint8Array> {
  let heartbeat: ReturnType<typeof setInterval> | undefined;
  let open = true;
  const stop = () => {
    open = false;
    clearInterval(heartbeat);
    ends.stop();
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (event: string | Uint8Array) => {
        if (open) controller.enqueue(typeof event === "string" ? encoder.encode(event) : event);
        return open;
      };
      if (ends.first !== undefined) send(ends.first);
      heartbeat = setInterval(() => send(": keep-alive\n\n"), pace.heartbeatMs);
      void (async () => {
        try {
          for await (const event of events) {
            if (!send(event)) return;
            if ((controller.desiredSize ?? 1) <= 0) break; // a slow reader: end after the queue
          }
        } catch (error) {
          const text = ends.failed?.(error);
          if (text !== undefined) send(text);
        }
        if (!open) return;
        if (ends.last !== undefined) send(ends.last);
        stop();
        controller.close();
      })();
    },
    cancel() {
      // The client went away.
      stop();
    },
  }, new ByteLengthQueuingStrategy({ highWaterMark: pace.maxQueuedBytes }));
}
