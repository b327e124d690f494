import type { ConnectRouter, ConnectRouterOptions } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import type { Logger } from "../lib/log.ts";
import type { BookStore } from "../store/books.ts";
import { booksService } from "./books_service.ts";
import { BooksService } from "./gen/books/v1/books_pb.ts";
import { Health } from "./gen/grpc/health/v1/health_pb.ts";
import * as reflectionV1 from "./gen/grpc/reflection/v1/reflection_pb.ts";
import * as reflectionV1alpha from "./gen/grpc/reflection/v1alpha/reflection_pb.ts";
import { healthService, type HealthState } from "./health_service.ts";
import { serverInterceptor } from "./interceptor.ts";
import { reflectionServices } from "./reflection_service.ts";
import { withLongTimeoutsUnbounded } from "./long_timeouts.ts";
import { refuseUndecodableQuery, withUndecodableAsInvalidArgument } from "./undecodable.ts";

/** Largest message accepted or sent, as gRPC's usual default: 4 MiB. */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** The application services (both ports) and the standard ones (gRPC listener only). */
export const APP_SERVICES = [BooksService] as const;
export const STANDARD_SERVICES = [
  Health,
  reflectionV1.ServerReflection,
  reflectionV1alpha.ServerReflection,
] as const;

/** Handler options shared by both ports: limits, error rendering, graceful shutdown. */
export function handlerOptions(options: {
  logger: Logger;
  accessLog: boolean;
  shutdownSignal?: AbortSignal;
}): ConnectRouterOptions {
  return {
    acceptCompression: [compressionGzip, compressionBrotli],
    readMaxBytes: MAX_MESSAGE_BYTES,
    writeMaxBytes: MAX_MESSAGE_BYTES,
    interceptors: [serverInterceptor(options)],
    requestGate: refuseUndecodableQuery,
    ...(options.shutdownSignal ? { shutdownSignal: options.shutdownSignal } : {}),
  };
}

/** Registers the application services: `books.v1.BooksService`. */
export function appRoutes(books: BookStore): (router: ConnectRouter) => void {
  return (router) => {
    router.service(BooksService, booksService(books));
  };
}

/** Registers everything the gRPC listener serves: the application, health and reflection. */
export function grpcListenerRoutes(
  deps: { books: BookStore; health: HealthState },
): (router: ConnectRouter) => void {
  const reflection = reflectionServices([...APP_SERVICES, ...STANDARD_SERVICES]);
  return withUndecodableAsInvalidArgument(withLongTimeoutsUnbounded((router) => {
    appRoutes(deps.books)(router);
    router.service(Health, healthService(deps.health));
    router.service(reflectionV1.ServerReflection, reflection.v1);
    router.service(reflectionV1alpha.ServerReflection, reflection.v1alpha);
  }));
}
