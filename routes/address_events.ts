import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { AddressSchema, EXAMPLE_ADDRESS } from "../lib/address.ts";
import { errorResponse } from "../lib/schemas.ts";
import { SCOPED_RESPONSES } from "../lib/http/openapi.ts";
import { type AppEnv, preEncoded } from "../lib/http/hono_env.ts";
import { ADDRESSES_EVENTS_PATH } from "../lib/paths.ts";
import { routeAccess } from "../security/access.ts";
import type { AddressChange, AddressFeed, FeedStream } from "../store/addresses/feed.ts";
import {
  eventStreamBody,
  eventStreamHeaders,
  type EventStreamPace,
} from "../lib/http/event_stream.ts";

/**
 * GET /addresses/events: the caller's changes as Server-Sent Events, one event per change (the
 * change type as `event:`, the resume token as `id:`, the change as JSON in `data:`). The feed
 * (store/addresses/feed.ts) decides what and in which order; this door only frames it.
 */

const EventTypeSchema = z.enum(["created", "replaced", "updated", "deleted"]);

const AddressEventSchema = z.object({
  type: EventTypeSchema,
  id: z.number().int().openapi({ example: 1 }),
  // Named again: zod-to-openapi reads the name `.meta({ id })` gives AddressSchema from that
  // schema alone, so the optional one would be inlined instead of referring to it.
  address: AddressSchema.optional().openapi(AddressSchema.meta()!.id!, {
    description: "The address as stored by the change; absent for `deleted`.",
  }),
  etag: z.string().optional().openapi({
    description: "The ETag of that version (the `ETag` header's value); absent for `deleted`.",
    example: '"n5rVYl3K1Zm4Qx0sTq2Wbg"',
  }),
}).openapi("AddressEvent", {
  description: "One change of the caller's address book, the `data:` of an event.",
});

const TOKEN_DESCRIPTION = "A resume token: the `id:` of the last event received. The stream " +
  "starts after that change. A token of another caller, edited or of another server's storage " +
  "is 400 `invalid-parameter`; one whose following changes are no longer kept is 410 " +
  "`events-expired` (read the addresses again, then open a stream without a token).";

const watchAddresses = createRoute({
  ...routeAccess("addresses:read"),
  method: "get",
  path: ADDRESSES_EVENTS_PATH,
  operationId: "watchAddresses",
  tags: ["addresses"],
  summary: "Stream the caller's address changes",
  description: "Server-Sent Events (`text/event-stream`), one event per committed change of " +
    "the caller's addresses, in commit order, whichever style or process made it: `event:` " +
    "the type (`created`, `replaced`, `updated`, `deleted`), `id:` the resume token, `data:` " +
    "an `AddressEvent`. Without `Last-Event-ID` (or `after`) the stream starts with the " +
    "changes committed after it opened; its first line is an `id:` of that position, so a " +
    "client that reconnects before any change loses none. A comment line comes at least " +
    "every 15 s. The stream ends when the token that opened it expires, at shutdown, or when " +
    "the client reads too slowly; a client resumes with the last id it received. Changes are " +
    "kept for `EVENTS_RETENTION` (a day by default). Open streams are limited per caller and " +
    "per server (429 `rate-limited`). Needs the scope `addresses:read`.",
  request: {
    query: z.object({
      after: z.string().max(100).optional().openapi({ description: TOKEN_DESCRIPTION }),
    }),
    headers: z.object({
      "last-event-id": z.string().max(100).optional().openapi({
        param: { name: "last-event-id", in: "header" },
        description: `${TOKEN_DESCRIPTION} An \`EventSource\` sends it when it reconnects; ` +
          "it wins over `after`.",
      }),
    }),
  },
  responses: {
    200: {
      description: "The stream of changes",
      content: {
        "text/event-stream": {
          schema: AddressEventSchema,
          example: { type: "created", id: 1, address: EXAMPLE_ADDRESS },
        },
      },
    },
    400: errorResponse(
      "`invalid-parameter`: a resume token this server did not issue to the caller",
    ),
    410: errorResponse("`events-expired`: the changes after the token are no longer kept"),
    ...SCOPED_RESPONSES,
  },
});

/** How the door paces a stream (the defaults: a heartbeat every 15 s, 256 KB queued). */
export type EventsDoorOptions = Partial<EventStreamPace>;

const encoder = new TextEncoder();

// A change the feed delivers to several streams of its owner is one object: encoded once.
const encoded = new WeakMap<AddressChange, Uint8Array>();

function bytesOf(change: AddressChange): Uint8Array {
  let bytes = encoded.get(change);
  if (bytes === undefined) encoded.set(change, bytes = encoder.encode(eventOf(change)));
  return bytes;
}

/** One change as an event. */
export function eventOf(change: AddressChange): string {
  const data = change.address === undefined
    ? { type: change.type, id: change.id }
    : { type: change.type, id: change.id, address: change.address, etag: change.etag };
  return `event: ${change.type}\nid: ${change.token}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * The response body: the opening position, then each change as the feed yields it. A storage
 * failure mid-stream ends it; the client resumes with the last id it received.
 */
export function eventStream(stream: FeedStream, pace: EventStreamPace): ReadableStream<Uint8Array> {
  async function* events() {
    for await (const change of stream) yield bytesOf(change);
  }
  return eventStreamBody(events(), pace, {
    // An `id:` without data dispatches no event, but is the position a reconnect resumes from.
    first: `: changes of this caller\nid: ${stream.position}\n\n`,
    stop: () => stream.close(),
  });
}

/** Registers the route; before the address routes, so `/addresses/events` is not an id. */
export function addressEventsRoutes(
  feed: AddressFeed,
  app: OpenAPIHono<AppEnv>,
  options: EventsDoorOptions = {},
): void {
  const paced = { heartbeatMs: 15_000, maxQueuedBytes: 256 * 1024, ...options };
  app.openapi(watchAddresses, async (c) => {
    const caller = c.get("caller");
    const after = c.req.valid("header")["last-event-id"] ?? c.req.valid("query").after;
    // Refusals (limits, a bad or expired token) are thrown here, before the first byte.
    const stream = await feed.open(caller.owner, {
      after: after === "" ? undefined : after,
      caller: caller.subject ?? caller.owner,
      signal: c.req.raw.signal,
      until: caller.expiresAt,
    });
    return preEncoded(
      new Response(eventStream(stream, paced), { headers: eventStreamHeaders(c.get("requestId")) }),
    );
  });
}
