import type { Address } from "../lib/address.ts";
import { ADDRESS_CACHE_CONTROL } from "../lib/http/conditional.ts";
import { jsonHeaders } from "../lib/http/negotiate.ts";
import type { AddressStore } from "../store/addresses/repository.ts";

/** Addresses on a page when the request names no `limit`. */
export const DEFAULT_PAGE_LIMIT = 50;

const encoder = new TextEncoder();

/**
 * The body of `GET /addresses`, `{"addresses":[…],"nextCursor":…}`, built from the batches the
 * store hands on as it reads (store `listBatches`): each batch is encoded to bytes at once, so
 * the page's objects die young and what a request keeps is its bytes. The result is byte for
 * byte `JSON.stringify({ addresses, nextCursor })`.
 */
export function pageBody(): {
  add(addresses: readonly Address[]): void;
  end(nextCursor: string | null): Uint8Array<ArrayBuffer>;
} {
  const parts: Uint8Array[] = [];
  let size = 0;
  const push = (text: string) => {
    const bytes = encoder.encode(text);
    parts.push(bytes);
    size += bytes.byteLength;
  };
  return {
    add(addresses) {
      if (addresses.length === 0) return;
      // One stringify per batch: `[a,b]` becomes `{"addresses":[a,b` first, `,a,b` after.
      const json = JSON.stringify(addresses);
      push(parts.length === 0 ? `{"addresses":${json.slice(0, -1)}` : `,${json.slice(1, -1)}`);
    },
    end(nextCursor) {
      push(
        `${parts.length === 0 ? '{"addresses":[' : ""}],"nextCursor":${
          JSON.stringify(nextCursor)
        }}`,
      );
      const body = new Uint8Array(size);
      let at = 0;
      for (const part of parts) {
        body.set(part, at);
        at += part.byteLength;
      }
      return body;
    },
  };
}

/**
 * The answer to `GET /addresses` (the route's, and routes/address_front.ts's): the caller's page
 * after `cursor`, as JSON of `type`. Throws what the store throws (a cursor this server did not
 * issue, a storage failure) before anything is answered.
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
    { limit: query.limit ?? DEFAULT_PAGE_LIMIT, cursor: query.cursor },
    body.add,
  );
  return new Response(body.end(nextCursor), {
    headers: {
      ...jsonHeaders(answer.type, answer.requestId),
      "cache-control": ADDRESS_CACHE_CONTROL,
    },
  });
}
