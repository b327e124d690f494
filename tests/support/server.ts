import { loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { type RunningServer, startServer } from "../../main.ts";
import { checkContract } from "./contract.ts";
import type { ServerOptions } from "../../server/run.ts";

/** An in-process server on port 0 with a temporary KV file, and the log lines it wrote. */
export interface TestServer extends RunningServer {
  kvPath: string;
  logs: Record<string, unknown>[];
  /** Shuts down and removes the temporary KV directory. */
  close(): Promise<void>;
}

/** Starts the real server (both listeners on port 0 unless overridden) on a fresh KV file. */
export async function startTestServer(
  env: Record<string, string> = {},
  options: Pick<ServerOptions, "wrapKv"> = {},
): Promise<TestServer> {
  const dir = await Deno.makeTempDir({ prefix: "books-test-" });
  const kvPath = env.KV_PATH ?? `${dir}/kv.sqlite3`;
  const config = loadConfig({
    PORT: "0",
    GRPC_PORT: "0",
    HOST: "127.0.0.1",
    KV_PATH: kvPath,
    ...env,
  });
  const logs: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: "debug",
    write: (text) => {
      for (const line of text.split("\n")) if (line) logs.push(JSON.parse(line));
    },
  });
  const server = await startServer(config, { logger, ...options });
  checkContract(server.httpUrl);
  return {
    ...server,
    kvPath,
    logs,
    close: async () => {
      await server.shutdown();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** A server running as its own `deno run main.ts` process. */
export interface ServerProcess {
  httpUrl: string;
  grpcUrl: string | undefined;
  /** Sends SIGTERM and waits for exit; resolves to the exit code. */
  stop(): Promise<number>;
  /** Sends SIGKILL (no graceful anything) and waits for the process to be gone. */
  kill(): Promise<void>;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
}

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

/** Spawns the server as a separate process and waits for its `listening` log line. */
export async function spawnServer(env: Record<string, string>): Promise<ServerProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      "--allow-write",
      "--allow-run",
      MAIN,
    ],
    // No drain on SIGTERM unless a test asks for one.
    env: { PORT: "0", GRPC_PORT: "0", HOST: "127.0.0.1", SHUTDOWN_DRAIN_S: "0", ...env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  const deadline = Date.now() + 30_000;
  let listening: Record<string, unknown> | undefined;
  while (!listening) {
    const line = text.split("\n").find((l) => l.includes('"msg":"listening"'));
    if (line) listening = JSON.parse(line);
    else if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`server did not start:\n${text}`);
    } else await new Promise((r) => setTimeout(r, 25));
  }
  checkContract(String(listening.http));
  return {
    httpUrl: String(listening.http),
    grpcUrl: listening.grpc === undefined ? undefined : String(listening.grpc),
    output: () => text,
    kill: async () => {
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
      await child.status;
      await pumps;
    },
    stop: async () => {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      const status = await child.status;
      await pumps;
      return status.code;
    },
  };
}
