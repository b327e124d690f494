import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { AppError } from "../../lib/errors.ts";
import type { AddressChange, AddressFeed } from "../../store/addresses/feed.ts";
import {
  type AddressEvent,
  AddressEvent_Type,
  AddressEventSchema,
  type WatchAddressesRequest,
} from "../gen/addresses/v1/addresses_pb.ts";
import { addressMessage } from "./address_requests.ts";
import { callerOf } from "./caller.ts";

/**
 * AddressService.WatchAddresses: the feed (store/addresses/feed.ts) as a server stream, the same
 * changes REST's `GET /addresses/events` sends, in the same order, with the same tokens.
 */

const TYPES = {
  created: AddressEvent_Type.CREATED,
  replaced: AddressEvent_Type.REPLACED,
  updated: AddressEvent_Type.UPDATED,
  deleted: AddressEvent_Type.DELETED,
} as const;

function eventOf(change: AddressChange): AddressEvent {
  return create(AddressEventSchema, {
    type: TYPES[change.type],
    id: BigInt(change.id),
    resumeToken: change.token,
    ...(change.address === undefined
      ? {}
      : { address: addressMessage({ address: change.address, etag: change.etag! }) }),
  });
}

/** The method, over `feed` (absent where this process serves no feed: unit-test listeners). */
export function watchAddresses(feed: AddressFeed | undefined) {
  return async function* (
    request: WatchAddressesRequest,
    context: HandlerContext,
  ): AsyncGenerator<AddressEvent> {
    if (feed === undefined) {
      throw new AppError("service-unavailable", "This listener serves no live updates.");
    }
    const caller = callerOf(context);
    const stream = await feed.open(caller.owner, {
      after: request.resumeToken === "" ? undefined : request.resumeToken,
      caller: caller.subject ?? caller.owner,
      signal: context.signal,
      until: caller.expiresAt,
    });
    try {
      // The position first, so a client that goes away before any change resumes without loss.
      yield create(AddressEventSchema, { resumeToken: stream.position });
      for await (const change of stream) yield eventOf(change);
    } catch (error) {
      // A failure after the first message ends the stream; the client resumes from its last token.
      if (error instanceof AppError && error.code === "events-expired") throw error;
      throw new AppError("service-unavailable", "The stream of changes broke off; resume it.", {
        retryAfter: 1,
      });
    } finally {
      stream.close();
    }
  };
}
