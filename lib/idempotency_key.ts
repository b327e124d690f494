/**
 * The key that makes a creation safe to retry: REST's `Idempotency-Key` (IETF httpapi draft) and
 * gRPC's `request_id` (AIP-155) take the same keys, 1 to 255 visible ASCII characters (a UUID is
 * one), and share one record per owner and key.
 */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** What a refused key is told. */
export const IDEMPOTENCY_KEY_RULE = "must be 1 to 255 visible ASCII characters";
