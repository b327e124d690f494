import type { Address } from "../lib/address.ts";
import { ADDRESS_CACHE_CONTROL } from "../lib/http/conditional.ts";
import { jsonAnswer } from "../lib/http/negotiate.ts";
import { PAGE_SIZE } from "../lib/schemas.ts";
import type { AddressStore } from "../store/addresses/repository.ts";

/**
 * The body of `GET /addresses`, `{"addresses":[…],"nextCursor":…}`, built from the batches the
 * store hands on as it reads (store `listBatches`): each batch is stringified at once, so the
 * page's objects die young and what a request keeps is its text. The result is exactly
 * `JSON.stringify({ addresses, nextCursor })`.
 */
export function pageBody(): {
  add(addresses: readonly Address[]): void;
  end(nextCursor: string | null): string;
} {
  const parts: string[] = [];
  return {
    add(addresses) {
      if (addresses.length === 0) return;
      // One stringify per batch: `[a,b]` becomes `{"addresses":[a,b` first, `,a,b` after.
      const json = JSON.stringify(addresses);
      parts.push(
        parts.length === 0 ? `{"addresses":${json.slice(0, -1)}` : `,${json.slice(1, -1)}`,
      );
    },
    end(nextCursor) {
      if (parts.length === 0) parts.push('{"addresses":[');
      parts.push(`],"nextCursor":${JSON.stringify(nextCursor)}}`);
      return parts.join("");
    },
  };
}

/**
 * The answer to `GET /addresses`: the caller's page after `cursor`, as JSON of `type`. Throws
 * what the store throws (a cursor this server did not issue, a storage failure) before anything
 * is answered.
 */
export async function pageAnswer(
  addresses: AddressStore,
  owner: string,
  query: { limit?: number | undefined; cursor?: string | undefined },
  answer: { type: string; requestId: string },
): Promise<Response> {
  const body = pageBody();
  const nextCursor = await addresses.listBatches(
    owner,
    { limit: query.limit ?? PAGE_SIZE.default, cursor: query.cursor },
    body.add,
  );
  return jsonAnswer(body.end(nextCursor), {
    ...answer,
    headers: { "cache-control": ADDRESS_CACHE_CONTROL },
  });
}
