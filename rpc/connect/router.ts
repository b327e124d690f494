import type { ConnectRouter, ConnectRouterOptions } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import type { Access } from "../../security/access.ts";
import type { Logger } from "../../lib/log.ts";
import type { BookStore } from "../../store/books.ts";
import type { AddressStore } from "../../store/addresses/repository.ts";
import type { AddressFeed } from "../../store/addresses/feed.ts";
import { booksService } from "./books_service.ts";
import { addressService } from "./address_service.ts";
import { BooksService } from "../gen/books/v1/books_pb.ts";
import { AddressService } from "../gen/addresses/v1/addresses_pb.ts";
import { file_google_rpc_error_details } from "../gen/google/rpc/error_details_pb.ts";
import { Health } from "../gen/grpc/health/v1/health_pb.ts";
import * as reflectionV1 from "../gen/grpc/reflection/v1/reflection_pb.ts";
import * as reflectionV1alpha from "../gen/grpc/reflection/v1alpha/reflection_pb.ts";
import { healthService, type HealthState } from "./health_service.ts";
import { serverInterceptor } from "./interceptor.ts";
import { reflectionServices } from "./reflection_service.ts";
import { withLongTimeoutsUnbounded } from "./long_timeouts.ts";
import { refusingExpired } from "./deadline.ts";
import { refuseUndecodableQuery, withRaisedErrorsMapped } from "./raised_errors.ts";

/** Largest message accepted or sent, as gRPC's usual default: 4 MiB. */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** The application services (both ports) and the standard ones (gRPC listener only). */
export const APP_SERVICES = [BooksService, AddressService] as const;
const STANDARD_SERVICES = [
  Health,
  reflectionV1.ServerReflection,
  reflectionV1alpha.ServerReflection,
] as const;

/** What the application services serve from. */
export interface AppStores {
  books: BookStore;
  addresses: AddressStore;
  /** Live updates (WatchAddresses); absent in listeners of unit tests, which refuse the call. */
  feed?: AddressFeed | undefined;
}

/**
 * What each call needs from its caller (security/access.ts), declared with the services: the
 * application's books and addresses like REST's (reads `addresses:read`, writes
 * `addresses:write`), the health check as a probe (answered whatever the load or
 * the credentials), health watches and reflection public. A method not listed here is refused
 * like a path no service handles.
 */
const ACCESS: ReadonlyMap<string, Exclude<Access, "authenticated">> = new Map([
  [procedureOf(BooksService, BooksService.method.books), "books:read"],
  ...(["getAddress", "listAddresses", "watchAddresses"] as const).map((name) =>
    [procedureOf(AddressService, AddressService.method[name]), "addresses:read"] as const
  ),
  ...(["createAddress", "replaceAddress", "updateAddress", "deleteAddress"] as const).map(
    (name) =>
      [procedureOf(AddressService, AddressService.method[name]), "addresses:write"] as const,
  ),
  [procedureOf(Health, Health.method.check), "probe"],
  [procedureOf(Health, Health.method.watch), "public"],
  ...[reflectionV1.ServerReflection, reflectionV1alpha.ServerReflection].map((service) =>
    [procedureOf(service, service.method.serverReflectionInfo), "public"] as const
  ),
]);

/** `package.Service/method`: a call's name, its path without the leading `/`. */
export function procedureOf(service: { typeName: string }, method: { name: string }): string {
  return `${service.typeName}/${method.name}`;
}

/** The access a procedure (`package.Service/method`) declares; "authenticated" when none. */
export function rpcAccess(procedure: string): Exclude<Access, "authenticated"> | "authenticated" {
  return ACCESS.get(procedure) ?? "authenticated";
}

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

/** Registers the application services: `books.v1.BooksService`, `addresses.v1.AddressService`. */
export function appRoutes(stores: AppStores): (router: ConnectRouter) => void {
  return (router) => {
    router.service(BooksService, refusingExpired(booksService(stores.books)));
    router.service(AddressService, refusingExpired(addressService(stores.addresses, stores.feed)));
  };
}

/** Registers everything the gRPC listener serves: the application, health and reflection. */
export function grpcListenerRoutes(
  deps: AppStores & { health: HealthState },
): (router: ConnectRouter) => void {
  // Generic clients (grpcurl, buf curl) decode an error's details with the types found here.
  const reflection = reflectionServices(
    [...APP_SERVICES, ...STANDARD_SERVICES],
    [file_google_rpc_error_details],
  );
  return withRaisedErrorsMapped(withLongTimeoutsUnbounded((router) => {
    appRoutes(deps)(router);
    router.service(Health, healthService(deps.health));
    router.service(reflectionV1.ServerReflection, reflection.v1);
    router.service(reflectionV1alpha.ServerReflection, reflection.v1alpha);
  }));
}
