// Starts the server in this process, then prints memory every second while wrk loads it.
import { loadConfig } from "/work/main/lib/config.ts";
import { createLogger } from "/work/main/lib/log.ts";
import { startServer } from "/work/main/server/run.ts";
const dir = await Deno.makeTempDir();
const env = { ...Deno.env.toObject(), PORT: "0", GRPC_PORT: "off", HOST: "127.0.0.1", KV_PATH: `${dir}/kv.sqlite3`, LOG_LEVEL: "info", MAX_ADDRESSES_PER_OWNER: "999999999", SHUTDOWN_DRAIN_S: "0" };
const config = loadConfig(env);
const logger = createLogger({ level: "info", write: () => {} });
const server = await startServer(config, { logger });
console.error("url", server.httpUrl);
await Deno.writeTextFile("/tmp/memx/url", server.httpUrl);
const mb = (n: number) => (n / 1048576).toFixed(1);
setInterval(() => {
  const m = Deno.memoryUsage();
  const st = Deno.readTextFileSync("/proc/self/status").match(/VmHWM:\s+(\d+)/)![1];
  console.error(`rss ${mb(m.rss)} hwm ${(+st/1024).toFixed(1)} heapTotal ${mb(m.heapTotal)} heapUsed ${mb(m.heapUsed)} external ${mb(m.external)}`);
}, 1000);
