import {
  GraphQLEnumType,
  type GraphQLFieldConfig,
  GraphQLID,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLString,
} from "graphql";
import { AppError } from "../lib/errors.ts";
import type { Scope } from "../security/access.ts";
import type { AddressChange, AddressFeed, FeedStream } from "../store/addresses/feed.ts";
import { addressNode, AddressType } from "./address_types.ts";

/**
 * The `addressEvents` subscription: the feed (store/addresses/feed.ts) as GraphQL results, the
 * same changes REST's `GET /addresses/events` and gRPC's `WatchAddresses` send, in the same
 * order, with the same tokens (`cursor`). graphql/event_stream.ts carries it over Server-Sent
 * Events.
 */

/** What a subscription acts with: the caller as the gate admitted it, and the feed. */
export interface EventsContext {
  owner: string;
  /** Who holds the stream, for the per-caller limit. */
  caller: string;
  /** When the caller's token expires (ms since the epoch): the stream ends then. */
  expiresAt?: number | undefined;
  /** Ends the stream: the client went away. */
  signal: AbortSignal;
  feed?: AddressFeed | undefined;
}

const EventTypeEnum = new GraphQLEnumType({
  name: "AddressEventType",
  description: "What happened to an address.",
  values: {
    OPENED: {
      value: "opened",
      description: "Only a stream's first result: the position it opened at (`cursor`), no " +
        "change; a client that goes away before any change resumes from it without loss.",
    },
    CREATED: {
      value: "created",
      description: "Stored at a new id (a create, a PUT that creates, an import).",
    },
    REPLACED: {
      value: "replaced",
      description: "Replaced whole or in part by a PUT (`replaceAddress`).",
    },
    UPDATED: {
      value: "updated",
      description: "Changed by a merge patch (`updateAddress`, PATCH).",
    },
    DELETED: {
      value: "deleted",
      description: "Deleted, alone or with every address of the caller.",
    },
  },
});

/** A change, or a stream's opening position (its first result). */
type StreamedEvent = AddressChange | { type: "opened"; id: 0; token: string; address?: undefined };

const AddressEventType = new GraphQLObjectType<StreamedEvent>({
  name: "AddressEvent",
  description: "One committed change of the caller's address book.",
  fields: {
    type: { type: new GraphQLNonNull(EventTypeEnum) },
    id: {
      type: new GraphQLNonNull(GraphQLID),
      description: "The address's id (0 for OPENED).",
      resolve: (change) => change.id,
    },
    address: {
      type: AddressType,
      description: "The address as the change stored it, with its etag; null for DELETED.",
      resolve: (change) =>
        change.address === undefined ? null : addressNode(change.address, change.etag!),
    },
    cursor: {
      type: new GraphQLNonNull(GraphQLString),
      description: "Resumes after this change: `addressEvents(after: cursor)`.",
      resolve: (change) => change.token,
    },
  },
});

/** The stream, its opening position first. */
async function* withPosition(stream: FeedStream): AsyncGenerator<StreamedEvent> {
  try {
    yield { type: "opened", id: 0, token: stream.position };
    yield* stream;
  } finally {
    stream.close();
  }
}

/** The subscription's root fields and the scope each needs. */
export const ADDRESS_SUBSCRIPTIONS: Readonly<
  // deno-lint-ignore no-explicit-any
  Record<string, { access: Scope; config: GraphQLFieldConfig<unknown, EventsContext, any> }>
> = {
  addressEvents: {
    access: "addresses:read",
    config: {
      type: new GraphQLNonNull(AddressEventType),
      description: "The caller's changes as they commit, in commit order (`GET " +
        "/addresses/events`): after `after` (a `cursor` received before), or from now. Served " +
        "over GraphQL over Server-Sent Events (`POST /graphql` with `Accept: " +
        "text/event-stream`). A cursor of another caller or edited is `invalid-parameter`; " +
        "one whose following changes are no longer kept is `events-expired`; too many streams " +
        "open is `rate-limited`. The stream ends when the caller's token expires or the server " +
        "shuts down: subscribe again with the last cursor.",
      args: { after: { type: GraphQLString } },
      // Opened before the answer starts: a refusal is the answer, and the position a stream
      // without `after` starts at is fixed when the client sees it open.
      subscribe: async (
        _root: unknown,
        args: { after?: string | null },
        context: EventsContext,
      ): Promise<AsyncIterableIterator<StreamedEvent>> => {
        if (context.feed === undefined) {
          throw new AppError("service-unavailable", "This server serves no live updates.");
        }
        const stream = await context.feed.open(context.owner, {
          after: args.after ?? undefined,
          caller: context.caller,
          signal: context.signal,
          until: context.expiresAt,
        });
        return withPosition(stream);
      },
      resolve: (change: unknown) => change,
    },
  },
};
