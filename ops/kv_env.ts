/**
 * What the operator tools (export, import, migrate) share: the KV named by the environment the
 * server reads (`KV_PATH`: a file, an `http(s)://` KV Connect URL with `DENO_KV_ACCESS_TOKEN`;
 * the platform KV with `DENO_DEPLOYMENT_ID`), failures as one line, and progress on stderr.
 */
import { ConfigError, loadConfig } from "../lib/config.ts";
import { kvLabel } from "../store/kv/label.ts";
import { openKv } from "../store/kv/open.ts";

/** Prints `<tool>: <message>` on stderr and exits (2: usage or configuration, 1: failure). */
export function fail(tool: string, message: string, code = 1): never {
  console.error(`${tool}: ${message}`);
  Deno.exit(code);
}

/** Opens the configured KV; a bad variable ends the tool with the server's one-line message. */
export async function openConfiguredKv(tool: string): Promise<{ kv: Deno.Kv; label: string }> {
  let config;
  try {
    config = loadConfig(Deno.env.toObject());
  } catch (error) {
    fail(tool, error instanceof ConfigError ? error.message : String(error), 2);
  }
  const kv = await openKv(config.kvPlatform ? undefined : config.kvPath);
  return { kv, label: kvLabel(config) };
}

/** The one line a failure prints: the message of an expected error, the error otherwise. */
export function failureText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Writes progress lines on stderr: the first at once (so a watcher knows work began), then at
 * most one every half second.
 */
export function progressPrinter(tool: string): (text: string) => void {
  let last = 0;
  const encoder = new TextEncoder();
  return (text) => {
    const now = performance.now();
    if (last !== 0 && now - last < 500) return;
    last = now;
    Deno.stderr.writeSync(encoder.encode(`${tool}: ${text}\n`));
  };
}

/** Seconds since `started` (performance.now()), for the closing line. */
export function secondsSince(started: number): string {
  return ((performance.now() - started) / 1000).toFixed(1);
}
