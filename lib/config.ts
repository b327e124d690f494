import { z } from "zod";
import { ConfigError } from "./config_error.ts";

const port = z.string().regex(/^[0-9]{1,5}$/, "must be a port number from 0 to 65535")
  .transform(Number)
  .refine((n) => n <= 65535, "must be a port number from 0 to 65535");
const positiveInt = z.string().regex(/^[1-9][0-9]{0,8}$/, "must be a positive integer")
  .transform(Number);

const ConfigSchema = z.object({
  PORT: port.default(8000),
  GRPC_PORT: z.union([z.literal("off"), port]).default(50051),
  GRPC_ISOLATION: z.enum(["process", "inline"], "must be process or inline").default("process"),
  GRPC_TLS_CERT: z.string().min(1).optional(),
  GRPC_TLS_KEY: z.string().min(1).optional(),
  // Below the listener's global limit of 1,000 connections, so one address cannot take them all.
  GRPC_MAX_CONNECTIONS_PER_CLIENT: positiveInt.refine(
    (n) => n <= 1000,
    "must be at most 1000 (the listener's connection limit)",
  ).default(100),
  GRPC_HANDSHAKE_TIMEOUT_S: positiveInt.refine((n) => n <= 300, "must be at most 300").default(5),
  GRPC_IDLE_TIMEOUT_S: positiveInt.refine((n) => n <= 86400, "must be at most 86400 (a day)")
    .default(300),
  GRPC_CHILD_DENO_FLAGS: z.string().regex(
    /^\s*(--\S+(\s+--\S+)*)?\s*$/,
    "must be `deno run` flags separated by spaces, each starting with --",
  ).optional(),
  HOST: z.string().min(1).default("0.0.0.0"),
  KV_PATH: z.string().min(1).default("data/kv.sqlite3"),
  BOOKS_FILE: z.string().min(1).optional(),
  MAX_BODY_BYTES: positiveInt.default(65536),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error", "silent"]).default("info"),
  LOG_FORMAT: z.enum(["json", "pretty"], "must be json or pretty").optional(),
  SHUTDOWN_DRAIN_S: z.string().regex(/^[0-9]{1,4}$/, "must be whole seconds from 0 to 3600")
    .transform(Number).refine((n) => n <= 3600, "must be whole seconds from 0 to 3600")
    .default(5),
  GRAPHQL_MAX_DOCUMENT_BYTES: positiveInt.default(65536),
  GRAPHQL_MAX_TOKENS: positiveInt.default(2000),
  GRAPHQL_MAX_DEPTH: positiveInt.default(10),
  GRAPHQL_MAX_ALIASES: positiveInt.default(30),
  GRAPHQL_MAX_DIRECTIVES: positiveInt.default(50),
  GRAPHQL_MAX_COST: positiveInt.default(1000),
  GRAPHQL_MAX_MUTATIONS: positiveInt.default(10),
  GRAPHQL_INTROSPECTION: z.enum(["true", "false"], "must be true or false").default("true"),
  // The secret's value never appears in a message: only its length is checked here.
  AUTH_JWT_SECRET: z.string().refine(
    (s) => new TextEncoder().encode(s).byteLength >= 32,
    "must be at least 32 bytes",
  ).optional(),
  AUTH_JWKS_FILE: z.string().min(1).optional(),
  AUTH_JWKS_URL: z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).refine(
    (url) => url.startsWith("https:") || isLoopbackUrl(url),
    "must be an https URL (http only on a loopback host)",
  ).optional(),
  AUTH_ISSUER: z.string().min(1).optional(),
  AUTH_AUDIENCE: z.string().min(1).optional(),
  AUTH_BOOKS: z.enum(["public", "required"], "must be public or required").default("public"),
  RATE_LIMIT: z.string().regex(
    /^[1-9][0-9]{0,8}\/(s|min|h)$/,
    "must be <n>/s, <n>/min or <n>/h",
  ).optional(),
  CORS_ORIGINS: z.string().refine(
    validOrigins,
    "must be * or comma-separated origins such as " +
      "https://app.example.com",
  ).optional(),
  PUBLIC_URL: z.string().refine(
    validPublicUrl,
    "must be an absolute http(s) URL without query, fragment or credentials",
  ).optional(),
  MIGRATE_ON_START: z.enum(["true", "false"], "must be true or false").default("false"),
  // Changes are kept this long for streams to resume from (at most 30 days).
  EVENTS_RETENTION: z.string().regex(
    /^[1-9][0-9]{0,6}(s|min|h|d)$/,
    "must be <n>s, <n>min, <n>h or <n>d",
  ).refine((value) => durationMs(value) <= 30 * 86_400_000, "must be at most 30d")
    .default("24h"),
  EVENTS_MAX_STREAMS: positiveInt.refine((n) => n <= 100_000, "must be at most 100000")
    .default(1000),
  EVENTS_MAX_STREAMS_PER_CALLER: positiveInt.default(10),
  // A comment line this often keeps proxies from cutting an idle event stream (1s to 60s).
  EVENTS_HEARTBEAT: z.string().regex(/^[1-9][0-9]{0,1}s$/, "must be <n>s")
    .refine((value) => durationMs(value) <= 60_000, "must be at most 60s").default("15s"),
  // Unset: none with authentication off, DEFAULT_MAX_ADDRESSES_PER_OWNER with it on (loadConfig).
  MAX_ADDRESSES_PER_OWNER: positiveInt.optional(),
  // Set by Deno Deploy in every deployment.
  DENO_DEPLOYMENT_ID: z.string().min(1).optional(),
});

/**
 * `MAX_ADDRESSES_PER_OWNER` when unset and authentication is on: each token's `sub` is an owner, so
 * one caller cannot fill the disk for everyone. With authentication off every address has the one
 * anonymous owner and the address book is one book: no quota unless one is set.
 */
export const DEFAULT_MAX_ADDRESSES_PER_OWNER = 10_000;

/** Variables whose value must never be echoed in an error message. */
const SECRET_VARIABLES = new Set(["AUTH_JWT_SECRET"]);

function validOrigins(value: string): boolean {
  if (value.trim() === "*") return true;
  return value.split(",").every((part) => {
    const origin = part.trim();
    try {
      return new URL(origin).origin === origin && /^https?:/.test(origin);
    } catch {
      return false;
    }
  });
}

function validPublicUrl(value: string): boolean {
  if (!URL.canParse(value) || /[?#]/.test(value)) return false;
  const url = new URL(value);
  return /^https?:$/.test(url.protocol) && url.username === "" && url.password === "";
}

const DURATION_UNIT_MS = new Map([["s", 1000], ["min", 60_000], ["h", 3_600_000], [
  "d",
  86_400_000,
]]);

/** `24h`, `90min`: a duration of the form the schema admits, in milliseconds. */
function durationMs(value: string): number {
  const [, n, unit] = /^([0-9]+)(s|min|h|d)$/.exec(value)!;
  return Number(n) * DURATION_UNIT_MS.get(unit!)!;
}

/** `PUBLIC_URL` as a base to append paths to: normalised, without its trailing slash. */
function publicBase(value: string): string {
  const url = new URL(value);
  return url.origin + url.pathname.replace(/\/+$/, "");
}

/**
 * True for a URL whose host is this machine's loopback (127.0.0.0/8, ::1, localhost): keys
 * fetched from there over plain http never cross a network.
 */
function isLoopbackUrl(url: string): boolean {
  // The URL parser normalises 127.1, 0x7f.0.0.1 and [0:0:0:0:0:0:0:1] to their usual forms.
  const host = new URL(url).hostname;
  return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** How long changes are kept, and how many streams of them may be open. */
export interface EventsConfig {
  /** `EVENTS_RETENTION`. */
  retentionMs: number;
  /** `EVENTS_MAX_STREAMS`: streams open at once in one process. */
  maxStreams: number;
  /** `EVENTS_MAX_STREAMS_PER_CALLER`: streams one caller may have open at once in one process. */
  maxStreamsPerCaller: number;
  /** `EVENTS_HEARTBEAT`: how often an idle event stream gets a comment line. */
  heartbeatMs: number;
}

/** Validated server configuration. */
export interface Config {
  port: number;
  grpcPort: number | "off";
  /** `process`: the gRPC listener runs in a supervised child process; `inline`: in this one. */
  grpcIsolation: "process" | "inline";
  /** PEM certificate and key files: the gRPC listener serves TLS (h2 via ALPN) when set. */
  grpcTls: { certFile: string; keyFile: string } | undefined;
  /** The gRPC listener's connection hygiene (`GRPC_MAX_CONNECTIONS_PER_CLIENT`, `GRPC_*_TIMEOUT_S`). */
  grpcConnections: GrpcConnectionConfig;
  /**
   * `GRPC_CHILD_DENO_FLAGS`: extra `deno run` flags of the gRPC child process, for profiling
   * (`--cpu-prof`, `--v8-flags=--trace-gc`, `--inspect`); empty by default.
   */
  grpcChildFlags: string[];
  host: string;
  /** A file path, `:memory:`, or a KV Connect URL; ignored when `kvPlatform` is true. */
  kvPath: string;
  /** The deployment id on Deno Deploy (`DENO_DEPLOYMENT_ID`), else undefined. */
  deploymentId: string | undefined;
  /** On Deno Deploy without a KV Connect `KV_PATH`: the platform's KV (`Deno.openKv()`). */
  kvPlatform: boolean;
  booksFile: string | undefined;
  maxBodyBytes: number;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /** `LOG_FORMAT`; undefined: readable lines on a terminal, JSON elsewhere (lib/log.ts). */
  logFormat: "json" | "pretty" | undefined;
  /**
   * `SHUTDOWN_DRAIN_S`: after SIGTERM, readiness is 503 and the listeners keep serving this
   * long before they close, so a balancer notices and stops sending first.
   */
  shutdownDrainS: number;
  /** GraphQL limits, checked before execution, and whether introspection is allowed. */
  graphql: GraphqlConfig;
  /** JWT bearer authentication; undefined when off. */
  auth: AuthConfig | undefined;
  /** `RATE_LIMIT`: requests per window and client; undefined when off. */
  rateLimit: RateLimitConfig | undefined;
  /** `CORS_ORIGINS`: `*` or the allowed origins; undefined when off. */
  corsOrigins: "*" | string[] | undefined;
  /**
   * `PUBLIC_URL` without its trailing slash (`https://api.example.com`): links in bodies start
   * with it; undefined when unset (links are then relative).
   */
  publicUrl: string | undefined;
  /** `MIGRATE_ON_START`: migrate an older storage layout at start-up instead of refusing. */
  migrateOnStart: boolean;
  /**
   * `MAX_ADDRESSES_PER_OWNER`: creations past it are 409 `quota-exceeded`; `Infinity` (the default
   * with authentication off) when no quota applies.
   */
  maxAddressesPerOwner: number;
  /** Live updates (`EVENTS_*`). */
  events: EventsConfig;
}

/** Authentication settings (`AUTH_*`). At least one key source is set. */
export interface AuthConfig {
  /** HS256 secret (UTF-8 bytes of `AUTH_JWT_SECRET`). */
  secret: string | undefined;
  /** JWKS file of public keys (RS256, ES256, EdDSA). */
  jwksFile: string | undefined;
  /** JWKS URL, fetched and cached, rotation followed. */
  jwksUrl: string | undefined;
  issuer: string | undefined;
  audience: string | undefined;
  /** `AUTH_BOOKS=required`: reading books needs the `books:read` scope. */
  booksRequired: boolean;
}

/** How many connections the gRPC listener keeps per client, and for how long. */
export interface GrpcConnectionConfig {
  maxConnectionsPerClient: number;
  handshakeTimeoutMs: number;
  idleTimeoutMs: number;
}

/** A token bucket per client: `limit` requests per `windowSeconds`. */
export interface RateLimitConfig {
  limit: number;
  windowSeconds: number;
}

// A Map, like every table looked up by a string from outside (here the validated unit).
const WINDOW_SECONDS = new Map([["s", 1], ["min", 60], ["h", 3600]]);

/** GraphQL settings (`GRAPHQL_*`). */
export interface GraphqlConfig {
  maxDocumentBytes: number;
  maxTokens: number;
  maxDepth: number;
  maxAliases: number;
  maxDirectives: number;
  maxCost: number;
  /** Most mutation fields (writes) in one operation; each is one call against the rate limit. */
  maxMutations: number;
  introspection: boolean;
}

/** Thrown when an environment variable is invalid; the message names the variable. */
export { ConfigError } from "./config_error.ts";

/** Reads and validates the configuration from environment variables. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const picked = Object.fromEntries(
    Object.keys(ConfigSchema.shape).map((k) => [k, env[k] === "" ? undefined : env[k]]),
  );
  const parsed = ConfigSchema.safeParse(picked);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0]);
    const shown = SECRET_VARIABLES.has(name) ? "" : `=${JSON.stringify(picked[name])}`;
    throw new ConfigError(`invalid ${name}${shown}: ${issue.message}`);
  }
  const c = parsed.data;
  if ((c.GRPC_TLS_CERT === undefined) !== (c.GRPC_TLS_KEY === undefined)) {
    const [missing, other] = c.GRPC_TLS_CERT === undefined
      ? ["GRPC_TLS_CERT", "GRPC_TLS_KEY"]
      : ["GRPC_TLS_KEY", "GRPC_TLS_CERT"];
    throw new ConfigError(`invalid ${missing}: must be set together with ${other}`);
  }
  const keyed = c.AUTH_JWT_SECRET ?? c.AUTH_JWKS_FILE ?? c.AUTH_JWKS_URL;
  if (keyed === undefined) {
    for (const name of ["AUTH_ISSUER", "AUTH_AUDIENCE"] as const) {
      if (c[name] !== undefined) {
        throw new ConfigError(
          `invalid ${name}: needs AUTH_JWT_SECRET, AUTH_JWKS_FILE or AUTH_JWKS_URL`,
        );
      }
    }
    if (c.AUTH_BOOKS === "required") {
      throw new ConfigError(
        "invalid AUTH_BOOKS=required: needs AUTH_JWT_SECRET, AUTH_JWKS_FILE or AUTH_JWKS_URL",
      );
    }
  }
  // An identity provider signs tokens for many clients: without an audience, any token it
  // issued for any of them would be accepted here.
  if ((c.AUTH_JWKS_FILE ?? c.AUTH_JWKS_URL) !== undefined && c.AUTH_AUDIENCE === undefined) {
    throw new ConfigError(
      "invalid AUTH_AUDIENCE: required with AUTH_JWKS_FILE or AUTH_JWKS_URL " +
        "(an identity provider signs tokens for many clients)",
    );
  }
  if (c.AUTH_JWKS_URL !== undefined && c.AUTH_ISSUER === undefined) {
    throw new ConfigError("invalid AUTH_ISSUER: required with AUTH_JWKS_URL");
  }
  const rate = c.RATE_LIMIT?.split("/");
  const origins = c.CORS_ORIGINS?.trim();
  return {
    port: c.PORT,
    grpcPort: c.GRPC_PORT,
    grpcIsolation: c.GRPC_ISOLATION,
    grpcTls: c.GRPC_TLS_CERT && c.GRPC_TLS_KEY
      ? { certFile: c.GRPC_TLS_CERT, keyFile: c.GRPC_TLS_KEY }
      : undefined,
    grpcConnections: {
      maxConnectionsPerClient: c.GRPC_MAX_CONNECTIONS_PER_CLIENT,
      handshakeTimeoutMs: c.GRPC_HANDSHAKE_TIMEOUT_S * 1000,
      idleTimeoutMs: c.GRPC_IDLE_TIMEOUT_S * 1000,
    },
    grpcChildFlags: c.GRPC_CHILD_DENO_FLAGS?.trim().split(/\s+/).filter((f) => f !== "") ?? [],
    host: c.HOST,
    kvPath: c.KV_PATH,
    deploymentId: c.DENO_DEPLOYMENT_ID,
    kvPlatform: c.DENO_DEPLOYMENT_ID !== undefined && !/^https?:\/\//.test(c.KV_PATH),
    booksFile: c.BOOKS_FILE,
    maxBodyBytes: c.MAX_BODY_BYTES,
    logLevel: c.LOG_LEVEL,
    logFormat: c.LOG_FORMAT,
    shutdownDrainS: c.SHUTDOWN_DRAIN_S,
    graphql: {
      maxDocumentBytes: c.GRAPHQL_MAX_DOCUMENT_BYTES,
      maxTokens: c.GRAPHQL_MAX_TOKENS,
      maxDepth: c.GRAPHQL_MAX_DEPTH,
      maxAliases: c.GRAPHQL_MAX_ALIASES,
      maxDirectives: c.GRAPHQL_MAX_DIRECTIVES,
      maxCost: c.GRAPHQL_MAX_COST,
      maxMutations: c.GRAPHQL_MAX_MUTATIONS,
      introspection: c.GRAPHQL_INTROSPECTION === "true",
    },
    auth: keyed === undefined ? undefined : {
      secret: c.AUTH_JWT_SECRET,
      jwksFile: c.AUTH_JWKS_FILE,
      jwksUrl: c.AUTH_JWKS_URL,
      issuer: c.AUTH_ISSUER,
      audience: c.AUTH_AUDIENCE,
      booksRequired: c.AUTH_BOOKS === "required",
    },
    rateLimit: rate === undefined
      ? undefined
      : { limit: Number(rate[0]), windowSeconds: WINDOW_SECONDS.get(rate[1]!)! },
    corsOrigins: origins === undefined
      ? undefined
      : origins === "*"
      ? "*"
      : origins.split(",").map((o) => o.trim()),
    publicUrl: c.PUBLIC_URL === undefined ? undefined : publicBase(c.PUBLIC_URL),
    migrateOnStart: c.MIGRATE_ON_START === "true",
    maxAddressesPerOwner: c.MAX_ADDRESSES_PER_OWNER ??
      (keyed === undefined ? Infinity : DEFAULT_MAX_ADDRESSES_PER_OWNER),
    events: {
      retentionMs: durationMs(c.EVENTS_RETENTION),
      maxStreams: c.EVENTS_MAX_STREAMS,
      maxStreamsPerCaller: c.EVENTS_MAX_STREAMS_PER_CALLER,
      heartbeatMs: durationMs(c.EVENTS_HEARTBEAT),
    },
  };
}
