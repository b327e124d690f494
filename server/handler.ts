import type { Admission } from "../security/admission.ts";

/** A Deno.serve handler: what a listener (or a host such as `deno serve`) calls. */
export type Handler = (
  request: Request,
  info: Deno.ServeHandlerInfo,
) => Response | Promise<Response>;

/** A handler behind the entry: the app or the refusals. */
export type Inner = (request: Request, admission: Admission) => Response | Promise<Response>;
