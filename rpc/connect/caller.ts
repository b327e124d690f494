import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import { ANONYMOUS, type Caller } from "../../security/caller.ts";

/**
 * Who is calling, as the gate decided (security/gate.ts): set by whoever admitted the call (the
 * interceptor from the gate's decision on the gRPC listener, the HTTP app's route from the
 * entry's). Without a gate every caller is the anonymous owner, as on REST.
 */
export const callerKey = createContextKey<Caller>(ANONYMOUS, { description: "caller" });

/** The caller a service implementation acts for. */
export function callerOf(context: HandlerContext): Caller {
  return context.values.get(callerKey);
}
