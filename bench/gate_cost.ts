/**
 * Server CPU per request with the gate off and on, over real sockets:
 * `deno run -A bench/gate_cost.ts [requests]`. Reads the server's CPU time from /proc, so other
 * load on the machine changes the numbers less than it changes throughput. Not part of
 * `deno task bench`.
 */
import { cpuSeconds } from "./proc.ts";
import { hsToken, SECRET } from "../tests/support/tokens.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;
const REQUESTS = Number(Deno.args[0] ?? 20_000);
const CONCURRENCY = 8;

async function start(env: Record<string, string>) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN],
    env: { PORT: "0", GRPC_PORT: "off", HOST: "127.0.0.1", KV_PATH: ":memory:", ...env },
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes('"msg":"listening"')) text += (await reader.read()).value ?? "";
  // Keep reading (and dropping) the access log so the server never blocks on stdout.
  (async () => {
    while (!(await reader.read()).done) { /* dropped */ }
  })();
  const url = JSON.parse(text.split("\n").find((l) => l.includes('"msg":"listening"'))!).http;
  return { url: String(url), pid: child.pid, stop: () => child.kill("SIGTERM") };
}

async function load(url: string, tokens: (i: number) => string | undefined) {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < REQUESTS; i = next++) {
      const token = tokens(i);
      const res = await fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
      if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

async function measure(
  name: string,
  env: Record<string, string>,
  path: string,
  tokens: (i: number) => string | undefined,
) {
  const server = await start(env);
  try {
    await load(`${server.url}${path}`, tokens); // warm-up
    const before = await cpuSeconds(server.pid);
    await load(`${server.url}${path}`, tokens);
    const cpu = await cpuSeconds(server.pid) - before;
    console.log(
      `${name.padEnd(48)} ${path.padEnd(12)} ${(cpu / REQUESTS * 1e6).toFixed(1)} µs CPU/request`,
    );
  } finally {
    server.stop();
  }
}

const claims = { sub: "alice", scope: "books:read addresses:read" };
const token = await hsToken(claims);
// Distinct tokens, each used once: every request verifies a signature.
const fresh = await Promise.all(
  Array.from({ length: 2 * REQUESTS }, (_, i) => hsToken({ ...claims, jti: String(i) })),
);
let used = 0;
const auth = { AUTH_JWT_SECRET: SECRET, AUTH_BOOKS: "required" };
const ROUNDS = Number(Deno.args[1] ?? 1);
for (const path of ["/rest/books", "/addresses"]) {
  // Rounds alternate the configurations, so load from elsewhere spreads over all of them.
  for (let round = 0; round < ROUNDS; round++) {
    await measure("auth off, rate limit off", {}, path, () => undefined);
    await measure("auth off, token sent anyway", {}, path, () => token);
    await measure("auth on (HS256), cached token", auth, path, () => token);
    await measure(
      "auth on (HS256), new token each request",
      auth,
      path,
      () => fresh[used++ % fresh.length],
    );
    await measure(
      "auth on, cached token, RATE_LIMIT",
      { ...auth, RATE_LIMIT: "1000000/s" },
      path,
      () => token,
    );
  }
}
