/**
 * The OpenAPI document as the server serves it: the real edge over an in-memory KV is asked for
 * `/openapi.json` in-process. The lint (`deno task check:openapi`), the client generator
 * (clients/generate.ts) and the contract check of the tests (tests/support/contract.ts) all read
 * the document from here, so they hold the served document, not a copy.
 */
import { loadConfig } from "../lib/config.ts";
import { createLogger } from "../lib/log.ts";
import { openEdge } from "../server/compose.ts";

/** The served `/openapi.json`, as text. */
export async function servedOpenApiText(): Promise<string> {
  const config = loadConfig({ KV_PATH: ":memory:", GRPC_PORT: "off" });
  const logger = createLogger({ level: "error", write: () => {} });
  const edge = await openEdge(config, logger, {
    isListening: () => true,
    isShuttingDown: () => false,
  });
  try {
    const info = {
      remoteAddr: { transport: "tcp", hostname: "127.0.0.1", port: 0 },
      completed: Promise.resolve(),
    } as Deno.ServeHandlerInfo;
    const response = await edge.handler(new Request("http://localhost/openapi.json"), info);
    if (response.status !== 200) throw new Error(`/openapi.json answered ${response.status}`);
    return await response.text();
  } finally {
    edge.kv.close();
  }
}

if (import.meta.main) {
  const text = await servedOpenApiText();
  const out = Deno.args[0];
  if (out === undefined) console.log(text);
  else await Deno.writeTextFile(out, text);
}
