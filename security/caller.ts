import { ANONYMOUS_OWNER } from "../store/addresses/keys.ts";
import type { Caller } from "../lib/caller.ts";

export type { Caller };

/** The caller when authentication is off. */
export const ANONYMOUS: Caller = Object.freeze({
  owner: ANONYMOUS_OWNER,
  subject: undefined,
  scopes: new Set<string>(),
});
