import type { ConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";

/** The call of a handler, without the metadata the adapters route by. */
export type HandlerCall = (
  request: Parameters<UniversalHandler>[0],
) => ReturnType<UniversalHandler>;

/**
 * Registers `routes`, then replaces every handler the router holds by `wrap(handler)`, keeping
 * what the adapters route by (path, methods, content types). The adapters read
 * `router.handlers` once the routes are registered.
 */
export function wrapHandlers(
  routes: (router: ConnectRouter) => void,
  wrap: (handler: UniversalHandler) => HandlerCall,
): (router: ConnectRouter) => void {
  return (router) => {
    routes(router);
    for (let i = 0; i < router.handlers.length; i++) {
      const handler = router.handlers[i]!;
      router.handlers[i] = Object.assign(wrap(handler), {
        protocolNames: handler.protocolNames,
        service: handler.service,
        method: handler.method,
        requestPath: handler.requestPath,
        allowedMethods: handler.allowedMethods,
        supportedContentType: handler.supportedContentType,
      });
    }
  };
}
