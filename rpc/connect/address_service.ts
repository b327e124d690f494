import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { AppError } from "../../lib/errors.ts";
import { mergePatch } from "../../lib/address.ts";
import type { AddressStore } from "../../store/addresses/repository.ts";
import { AddressService, ListAddressesResponseSchema } from "../gen/addresses/v1/addresses_pb.ts";
import {
  addressId,
  addressInput,
  addressMessage,
  addressPatch,
  etagCondition,
  invalidPageToken,
  pageOf,
  requestId,
  resourceEtag,
} from "./address_requests.ts";
import { callerOf } from "./caller.ts";
import { stillWanted } from "./deadline.ts";
import { watchAddresses } from "./address_events.ts";
import type { AddressFeed } from "../../store/addresses/feed.ts";

/** Response header of a create that replays an earlier one (REST: `Idempotent-Replayed`). */
export const REPLAYED_HEADER = "idempotent-replayed";

/**
 * `addresses.v1.AddressService` over the address book: each method is the REST request that
 * means the same (docs/grpc.md), on the same store, for the caller the gate admitted. Requests
 * are checked in REST's order (path, headers, body), so a request wrong in several ways gets the
 * code REST gives first. A write commits only while the call's deadline has not passed
 * (./deadline.ts; the store asks right before its commit).
 */
export function addressService(
  addresses: AddressStore,
  feed?: AddressFeed,
): ServiceImpl<typeof AddressService> {
  return {
    watchAddresses: watchAddresses(feed),

    async createAddress(request, context) {
      const input = addressInput(request.address);
      const key = requestId(request.requestId);
      const created = await addresses.create(callerOf(context).owner, input, key, {
        wanted: stillWanted(context),
      });
      if (created.replayed) context.responseHeader.set(REPLAYED_HEADER, "true");
      return addressMessage(created);
    },

    async getAddress(request, context) {
      const id = addressId(request.id);
      const stored = await addresses.get(callerOf(context).owner, id);
      if (!stored) throw new AppError("address-not-found", `No address has id ${id}.`);
      return addressMessage(stored);
    },

    async listAddresses(request, context) {
      const { limit, cursor } = pageOf(request);
      const page = await addresses.list(callerOf(context).owner, { limit, cursor }).catch(
        (error: unknown) => {
          // The one parameter the store checks: the token's contents.
          const badToken = cursor !== undefined && error instanceof AppError &&
            error.code === "invalid-parameter";
          throw badToken ? invalidPageToken() : error;
        },
      );
      return create(ListAddressesResponseSchema, {
        addresses: page.items.map(addressMessage),
        nextPageToken: page.nextCursor ?? "",
      });
    },

    async replaceAddress(request, context) {
      const id = addressId(request.id);
      const expected = resourceEtag(request);
      const input = addressInput(request.address);
      const options = { wanted: stillWanted(context) };
      return addressMessage(
        await addresses.put(callerOf(context).owner, id, input, expected, options),
      );
    },

    async updateAddress(request, context) {
      const id = addressId(request.id);
      const expected = resourceEtag(request);
      const patch = addressPatch(request.address, request.updateMask);
      const change = (current: Parameters<typeof mergePatch>[0]) => mergePatch(current, patch);
      const options = { wanted: stillWanted(context) };
      return addressMessage(
        await addresses.patch(callerOf(context).owner, id, change, expected, options),
      );
    },

    async deleteAddress(request, context) {
      const id = addressId(request.id);
      const expected = etagCondition(request.etag);
      await addresses.delete(callerOf(context).owner, id, expected, {
        wanted: stillWanted(context),
      });
      return {};
    },
  };
}
