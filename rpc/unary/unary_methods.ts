import {
  type ConnectRouter,
  type ConnectRouterOptions,
  createServiceImplSpec,
  type MethodImplSpec,
} from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import {
  createMethodSerializationLookup,
  type UniversalHandler,
  validateUniversalHandlerOptions,
} from "@connectrpc/connect/protocol";

/** Connect's handler options as its own handlers see them, defaults filled in. */
export type UnaryOptions = ReturnType<typeof validateUniversalHandlerOptions>;

type UnarySpec = Extract<MethodImplSpec, { kind: "unary" }>;
type Serialization = ReturnType<ReturnType<typeof createMethodSerializationLookup>["getI"]>;

/** One unary method as the lean path calls it: the service's own function and its messages. */
export interface UnaryMethod {
  /** `/package.Service/Method`. */
  readonly path: string;
  readonly spec: UnarySpec;
  /** Binary protobuf of the request and the answer, with Connect's size limits. */
  readonly input: Serialization;
  readonly output: Serialization;
  /**
   * Connect's own handler of the method, as the router holds it once every route is registered
   * (every wrapper applied): what a call the lean path does not take is answered by.
   */
  handler: UniversalHandler;
}

/** The unary methods of a router, by path, with the options their Connect handlers have. */
export interface UnaryMethods {
  readonly byPath: ReadonlyMap<string, UnaryMethod>;
  readonly options: UnaryOptions;
}

/**
 * Registers `routes` on the router as usual, and records the unary methods it registers with
 * their service implementations, so the lean path (./stream_unary.ts, ./fetch_unary.ts) calls
 * the same functions Connect's handlers call, with the same interceptors and limits. Each method
 * is paired with the handler the router ends up with for its path (after the wrappers in
 * `routes` replaced it), which answers what the lean path hands over.
 *
 * Services registered with options of their own are left to Connect alone.
 */
export function recordUnaryMethods(
  routes: (router: ConnectRouter) => void,
  options: ConnectRouterOptions,
): { routes: (router: ConnectRouter) => void; methods: UnaryMethods } {
  const byPath = new Map<string, UnaryMethod>();
  const opt = validateUniversalHandlerOptions(options);
  const record = (service: DescService, impl: Parameters<ConnectRouter["service"]>[1]) => {
    const spec = createServiceImplSpec(service, impl);
    for (const method of Object.values(spec.methods)) {
      if (method.kind !== "unary") continue;
      const serialization = createMethodSerializationLookup(
        method.method,
        opt.binaryOptions,
        opt.jsonOptions,
        opt,
      );
      byPath.set(`/${service.typeName}/${method.method.name}`, {
        path: `/${service.typeName}/${method.method.name}`,
        spec: method,
        input: serialization.getI(true),
        output: serialization.getO(true),
        handler: undefined as unknown as UniversalHandler,
      });
    }
  };
  const recording = (router: ConnectRouter): ConnectRouter => {
    const proxy: ConnectRouter = {
      get handlers() {
        return router.handlers;
      },
      service(service, impl, serviceOptions) {
        if (serviceOptions === undefined) record(service, impl);
        router.service(service, impl, serviceOptions);
        return proxy;
      },
      rpc(method, impl, rpcOptions) {
        router.rpc(method, impl, rpcOptions);
        return proxy;
      },
    };
    return proxy;
  };
  return {
    routes: (router) => {
      routes(recording(router));
      for (const handler of router.handlers) {
        const method = byPath.get(handler.requestPath);
        if (method) method.handler = handler;
      }
      for (const [path, method] of byPath) {
        if (method.handler === undefined) byPath.delete(path);
      }
    },
    methods: { byPath, options: opt },
  };
}
