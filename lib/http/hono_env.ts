import type { Caller } from "../caller.ts";

/**
 * What the listener's entry (server/entry.ts) hands every route about its request, as Hono's
 * `env`; security/admission.ts's `Admission` adds the gate's decision to it.
 */
export interface RequestBindings {
  /** Deno.serve's connection info (client address, `completed`). */
  info: Deno.ServeHandlerInfo;
  /** The canonical path (security/target.ts), the one the router matched. */
  path: string;
  /** `X-Request-Id` of the answer: the client's when well-formed, else a new UUID. */
  requestId: string;
  /** Who is calling: the gate's caller, or the anonymous owner without a gate. */
  caller: Caller;
}

/** Hono environment shared by every route: per-request variables set by middleware. */
export interface AppEnv {
  /** The entry's decision about the request (undefined in `app.request()` tests). */
  Bindings: RequestBindings | undefined;
  Variables: {
    requestId: string;
    /** Who is calling (set by the route's access declaration before anything of it runs). */
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
