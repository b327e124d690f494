import { type Service, startService } from "./service.ts";

/** What the server logs when its supervised gRPC listener process died and is restarted. */
export const GRPC_RESTART = "grpc listener died";

/** Where the project is and how its processes are pinned. */
export interface Place {
  root: string;
  serverCpus: string | undefined;
}

/**
 * The permission flags of `deno task start`, read from deno.json so the bench runs the server
 * exactly as production does; the temporary KV directory is added to the writable paths.
 */
export async function startFlags(root: string, writable: string): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(`${root}/deno.json`));
  const task = String(config.tasks?.start ?? "");
  const words = task.split(/\s+/).filter((w) => w.startsWith("--"));
  if (words.length === 0) throw new Error("deno.json has no `start` task to take flags from");
  return words.map((w) => w.startsWith("--allow-write=") ? `${w},${writable}` : w);
}

/**
 * Starts this project's server as `deno run main.ts` with the flags of `deno task start`, both
 * listeners on free ports on 127.0.0.1, a KV file in `kvDir`, and the production log level
 * (every request writes an access-log line).
 */
export async function startOurs(
  place: Place,
  options: {
    kvDir: string;
    booksFile?: string | undefined;
    name?: string;
    /** Strings to count in its log (see Service.markerCount). */
    markers?: string[];
    /** Keep the default address quota (else raised for the create workloads' one owner). */
    defaultQuota?: boolean;
    /** `LOG_LEVEL` (info: an access-log line per request, as in production). */
    logLevel?: "info" | "warn";
  },
): Promise<Service> {
  const flags = await startFlags(place.root, options.kvDir);
  const env: Record<string, string> = {
    PORT: "0",
    GRPC_PORT: "0",
    HOST: "127.0.0.1",
    KV_PATH: `${options.kvDir}/kv.sqlite3`,
    LOG_LEVEL: options.logLevel ?? "info",
    // Stopped between rounds: no orchestrator to drain for.
    SHUTDOWN_DRAIN_S: "0",
  };
  // The create workloads store far more than the default quota for their one owner.
  if (!options.defaultQuota) env.MAX_ADDRESSES_PER_OWNER = "999999999";
  if (options.booksFile) env.BOOKS_FILE = options.booksFile;
  return await startService({
    name: options.name ?? "ours",
    command: [Deno.execPath(), "run", ...flags, "main.ts"],
    env,
    cwd: place.root,
    cpus: place.serverCpus,
    markers: options.markers,
  });
}

/** The HTTP base URL from a `listening` line. */
export function httpUrlOf(service: Service): string {
  const url = service.listening.http;
  if (typeof url !== "string") throw new Error(`${service.name} printed no http URL`);
  return url;
}

/** The gRPC base URL from a `listening` line, or undefined when it has none. */
export function grpcUrlOf(service: Service): string | undefined {
  const url = service.listening.grpc;
  return typeof url === "string" ? url : undefined;
}
