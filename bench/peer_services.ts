import type { Answer } from "./reference.ts";
import { type Service, startService } from "./service.ts";

/** Where peers run: the project root (for deno.json and node_modules) and the server cores. */
export interface PeerPlace {
  root: string;
  serverCpus: string | undefined;
}

const peer = (file: string) => new URL(`./peers/${file}`, import.meta.url).pathname;

/** A peer of bench/peers/ run by this Deno with network, environment and read permission. */
function startDenoPeer(
  place: PeerPlace,
  spec: { name: string; file: string; env: Record<string, string>; flags?: string[] },
): Promise<Service> {
  return startService({
    name: spec.name,
    command: [
      Deno.execPath(),
      "run",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      ...spec.flags ?? [],
      peer(spec.file),
    ],
    env: spec.env,
    cwd: place.root,
    cpus: place.serverCpus,
  });
}

/** Writes the answers the raw ceiling serves: {"METHOD /path": {body, headers}}. */
export async function writeRoutes(path: string, routes: Map<string, Answer>): Promise<void> {
  const decoder = new TextDecoder();
  const json = Object.fromEntries(
    [...routes].map(([key, a]) => [key, { body: decoder.decode(a.body), headers: a.headers }]),
  );
  await Deno.writeTextFile(path, JSON.stringify(json));
}

/**
 * Plain `Deno.serve` answering with precomputed bytes (bench/peers/raw_deno.ts): with only the
 * content type, or with every header this server sends (`sameHeaders`).
 */
export function startRawDeno(
  place: PeerPlace,
  routesFile: string,
  sameHeaders = false,
): Promise<Service> {
  return startDenoPeer(place, {
    name: sameHeaders ? "raw Deno.serve, same headers" : "raw Deno.serve",
    file: "raw_deno.ts",
    env: { ROUTES_FILE: routesFile, RAW_HEADERS: sameHeaders ? "same" : "content-type" },
  });
}

/**
 * The stack's floor for the same answers: a minimal @hono/zod-openapi app sending the
 * same-headers ceiling's bytes and headers (bench/peers/zod_openapi_answers.ts).
 */
export function startZodOpenapiAnswers(place: PeerPlace, routesFile: string): Promise<Service> {
  return startDenoPeer(place, {
    name: "@hono/zod-openapi alone, same headers",
    file: "zod_openapi_answers.ts",
    env: { ROUTES_FILE: routesFile, RAW_HEADERS: "same" },
  });
}

/**
 * Plain `Deno.serve` reading addresses straight from Deno KV (bench/peers/raw_kv_addresses.ts),
 * on the KV file `kvPath` (a copy of the one this server reads: each process has its own file).
 */
export function startRawKv(place: PeerPlace, kvPath: string, name: string): Promise<Service> {
  return startDenoPeer(place, {
    name,
    file: "raw_kv_addresses.ts",
    env: { KV_PATH: kvPath },
    flags: [`--allow-write=${kvPath.slice(0, kvPath.lastIndexOf("/"))}`],
  });
}

/** graphql-yoga on Deno (bench/peers/yoga.ts). */
export function startYoga(place: PeerPlace, booksFile: string): Promise<Service> {
  return startDenoPeer(place, {
    name: "graphql-yoga",
    file: "yoga.ts",
    env: { BOOKS_FILE: booksFile },
  });
}

/**
 * An idiomatic Hono app on Deno with Hono's request-id, logger and etag middleware
 * (bench/peers/hono_app.ts). Its log goes to stdout, which the bench reads and discards as it
 * does this server's access log.
 */
export function startHono(place: PeerPlace, booksFile: string): Promise<Service> {
  return startDenoPeer(place, {
    name: "Hono app",
    file: "hono_app.ts",
    env: { BOOKS_FILE: booksFile },
  });
}

/** @grpc/grpc-js on Node (bench/peers/grpc_js_server.mjs). */
export function startGrpcJs(place: PeerPlace, booksFile: string): Promise<Service> {
  return startService({
    name: "@grpc/grpc-js",
    command: ["node", peer("grpc_js_server.mjs")],
    env: { BOOKS_FILE: booksFile },
    cwd: place.root,
    cpus: place.serverCpus,
  });
}

/**
 * A bare node:http2 server on this Deno answering every stream with the same pre-encoded gRPC
 * frame (bench/peers/bare_http2.ts): the runtime's ceiling for gRPC.
 */
export function startBareHttp2(place: PeerPlace, booksFile: string): Promise<Service> {
  return startDenoPeer(place, {
    name: "bare node:http2",
    file: "bare_http2.ts",
    env: { BOOKS_FILE: booksFile },
  });
}

/** The headers the matrix's HTTP ceiling sends: copied, and computed per answer. */
export interface CeilingHeaders {
  static: Record<string, string>;
  dynamic: string[];
}

/**
 * Plain `Deno.serve` doing the address book straight on Deno KV in every framing of the HTTP port
 * (bench/peers/raw_kv_address_book.ts), on the KV file `kvPath`, sending `headers`.
 */
export function startRawKvAddressBook(
  place: PeerPlace,
  kvPath: string,
  headers: CeilingHeaders,
  v1Kept: readonly string[],
): Promise<Service> {
  return startDenoPeer(place, {
    name: "raw Deno.serve on KV",
    file: "raw_kv_address_book.ts",
    env: { KV_PATH: kvPath, HEADERS: JSON.stringify(headers), V1_KEPT: v1Kept.join(",") },
    flags: [`--allow-write=${kvPath.slice(0, kvPath.lastIndexOf("/"))}`],
  });
}

/** The stack's floors for a read by id on the HTTP port: the library each framing is built on. */
export const STACK_FLOORS = {
  /** A minimal @hono/zod-openapi app (bench/peers/zod_openapi_kv.ts). */
  REST: { name: "@hono/zod-openapi alone on KV", file: "zod_openapi_kv.ts" },
  /** graphql-js and graphql-jit on Deno.serve (bench/peers/graphql_kv.ts). */
  GraphQL: { name: "graphql-jit alone on KV", file: "graphql_kv.ts" },
  /** Connect's own router and handler on Deno.serve (bench/peers/connect_kv.ts). */
  Connect: { name: "Connect's handler alone on KV", file: "connect_kv.ts" },
} as const;

/**
 * The stack's floor `floor` (STACK_FLOORS) reading addresses by id from the KV file `kvPath`,
 * sending `headers` as the matrix's HTTP ceiling does.
 */
export function startStackFloor(
  place: PeerPlace,
  floor: keyof typeof STACK_FLOORS,
  kvPath: string,
  headers: CeilingHeaders,
): Promise<Service> {
  return startDenoPeer(place, {
    name: STACK_FLOORS[floor].name,
    file: STACK_FLOORS[floor].file,
    env: { KV_PATH: kvPath, HEADERS: JSON.stringify(headers) },
    flags: [`--allow-write=${kvPath.slice(0, kvPath.lastIndexOf("/"))}`],
  });
}

/**
 * A bare node:http2 server doing the address book's gRPC methods straight on Deno KV
 * (bench/peers/bare_http2_address_book.ts), on the KV file `kvPath`.
 */
export function startBareHttp2AddressBook(
  place: PeerPlace,
  kvPath: string,
  v1Kept: readonly string[],
): Promise<Service> {
  return startDenoPeer(place, {
    name: "bare node:http2 on KV",
    file: "bare_http2_address_book.ts",
    env: { KV_PATH: kvPath, V1_KEPT: v1Kept.join(",") },
    flags: [`--allow-write=${kvPath.slice(0, kvPath.lastIndexOf("/"))}`],
  });
}
