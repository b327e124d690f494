import { z } from "zod";

/**
 * An Idempotency-Key (IETF httpapi draft): 1 to 255 visible ASCII characters. One rule for every
 * style that takes one (REST's header, GraphQL's `idempotencyKey` argument, gRPC's `request_id`
 * (AIP-155; a UUID is one)); the store scopes a
 * key to its owner, so the same key replays the same creation whichever style sent it.
 */
export const IdempotencyKeySchema = z.string().regex(
  /^[\x21-\x7e]{1,255}$/,
  "must be 1 to 255 visible ASCII characters",
);
