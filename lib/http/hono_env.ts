import type { Admission } from "../../security/admission.ts";
import type { Caller } from "../../security/caller.ts";

/** Hono environment shared by every route: per-request variables set by middleware. */
export interface AppEnv {
  /** The entry's decision about the request (undefined in `app.request()` tests). */
  Bindings: Admission | undefined;
  Variables: {
    requestId: string;
    /** Who is calling (set by the gate middleware before any route runs). */
    caller: Caller;
  };
}

/**
 * zod-openapi types a handler's result by the documented schema; a response whose body is
 * already encoded (the catalogue's cached JSON) is a plain Response, so it is passed through here.
 */
export function preEncoded(response: Response): never {
  return response as never;
}
