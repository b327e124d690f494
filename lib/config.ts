import { z } from "zod";

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
  HOST: z.string().min(1).default("0.0.0.0"),
  KV_PATH: z.string().min(1).default("data/kv.sqlite3"),
  BOOKS_FILE: z.string().min(1).optional(),
  MAX_BODY_BYTES: positiveInt.default(65536),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error", "silent"]).default("info"),
  GRAPHQL_MAX_DOCUMENT_BYTES: positiveInt.default(65536),
  GRAPHQL_MAX_TOKENS: positiveInt.default(2000),
  GRAPHQL_MAX_DEPTH: positiveInt.default(10),
  GRAPHQL_MAX_ALIASES: positiveInt.default(30),
  GRAPHQL_MAX_DIRECTIVES: positiveInt.default(50),
  GRAPHQL_MAX_COST: positiveInt.default(1000),
  GRAPHQL_INTROSPECTION: z.enum(["true", "false"], "must be true or false").default("true"),
});

/** Validated server configuration. */
export interface Config {
  port: number;
  grpcPort: number | "off";
  /** `process`: the gRPC listener runs in a supervised child process; `inline`: in this one. */
  grpcIsolation: "process" | "inline";
  /** PEM certificate and key files: the gRPC listener serves TLS (h2 via ALPN) when set. */
  grpcTls: { certFile: string; keyFile: string } | undefined;
  host: string;
  kvPath: string;
  booksFile: string | undefined;
  maxBodyBytes: number;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /** GraphQL limits, checked before execution, and whether introspection is allowed. */
  graphql: GraphqlConfig;
}

/** GraphQL settings (`GRAPHQL_*`). */
export interface GraphqlConfig {
  maxDocumentBytes: number;
  maxTokens: number;
  maxDepth: number;
  maxAliases: number;
  maxDirectives: number;
  maxCost: number;
  introspection: boolean;
}

/** Thrown when an environment variable is invalid; the message names the variable. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Reads and validates the configuration from environment variables. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const picked = Object.fromEntries(
    Object.keys(ConfigSchema.shape).map((k) => [k, env[k] === "" ? undefined : env[k]]),
  );
  const parsed = ConfigSchema.safeParse(picked);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0]);
    throw new ConfigError(`invalid ${name}=${JSON.stringify(picked[name])}: ${issue.message}`);
  }
  const c = parsed.data;
  if ((c.GRPC_TLS_CERT === undefined) !== (c.GRPC_TLS_KEY === undefined)) {
    const [missing, other] = c.GRPC_TLS_CERT === undefined
      ? ["GRPC_TLS_CERT", "GRPC_TLS_KEY"]
      : ["GRPC_TLS_KEY", "GRPC_TLS_CERT"];
    throw new ConfigError(`invalid ${missing}: must be set together with ${other}`);
  }
  return {
    port: c.PORT,
    grpcPort: c.GRPC_PORT,
    grpcIsolation: c.GRPC_ISOLATION,
    grpcTls: c.GRPC_TLS_CERT && c.GRPC_TLS_KEY
      ? { certFile: c.GRPC_TLS_CERT, keyFile: c.GRPC_TLS_KEY }
      : undefined,
    host: c.HOST,
    kvPath: c.KV_PATH,
    booksFile: c.BOOKS_FILE,
    maxBodyBytes: c.MAX_BODY_BYTES,
    logLevel: c.LOG_LEVEL,
    graphql: {
      maxDocumentBytes: c.GRAPHQL_MAX_DOCUMENT_BYTES,
      maxTokens: c.GRAPHQL_MAX_TOKENS,
      maxDepth: c.GRAPHQL_MAX_DEPTH,
      maxAliases: c.GRAPHQL_MAX_ALIASES,
      maxDirectives: c.GRAPHQL_MAX_DIRECTIVES,
      maxCost: c.GRAPHQL_MAX_COST,
      introspection: c.GRAPHQL_INTROSPECTION === "true",
    },
  };
}
