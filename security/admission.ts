import type { Decision } from "./gate.ts";

/**
 * What a listener's entry decided about an HTTP request, handed to everything after it: the
 * answers in front of the router read it, and the app gets it as Hono's `env` (its `getPath`
 * returns `path`, its gate middleware renders a refusal and sets the caller).
 */
export interface Admission {
  /** Deno.serve's connection info (client address, `completed`). */
  info: Deno.ServeHandlerInfo;
  /**
   * The canonical path (security/target.ts). For a target refused as not canonical, its raw path,
   * for the log (the refusal is rendered before any route could run).
   */
  path: string;
  /**
   * The gate's decision, or the entry's refusal of a target that is not canonical; undefined
   * when no gate is configured (every caller is the anonymous owner).
   */
  decision: Decision | undefined;
}
