/**
 * A full disk under a running server, measured (docs/failures.md):
 *
 *   deno run -A tools/fault_disk_full.ts [--seconds 20] [--size 16m] [--concurrency 20] [--main main.ts]
 *
 * Runs the server (`deno run main.ts`, gRPC off) in a user and mount namespace of its own on a
 * tmpfs of `--size` (unshare -rm: no root needed where user namespaces are allowed), creates a
 * few addresses, fills the tmpfs, sends creates for `--seconds` at `--concurrency`, frees the
 * space, waits for readiness, creates again, restarts the server on the same tmpfs and checks
 * that every acknowledged address is there. Prints one JSON summary: statuses while full, log
 * bytes (all, and other than access-log lines) before, during and after, and the time readiness
 * took to turn 200 once there was room.
 */
import { parseArgs } from "node:util";
import { EXAMPLE_INPUT } from "../lib/address.ts";

const args = parseArgs({
  options: {
    seconds: { type: "string", default: "20" },
    size: { type: "string", default: "16m" },
    concurrency: { type: "string", default: "20" },
    main: { type: "string", default: new URL("../main.ts", import.meta.url).pathname },
  },
});
const dir = await Deno.makeTempDir({ prefix: "books-disk-full-" });
const holder = new Deno.Command("unshare", {
  args: [
    "-rm",
    "sh",
    "-c",
    `mount -t tmpfs -o size=${args.values.size} tmpfs "$0" && exec cat`,
    dir,
  ],
  stdin: "piped",
}).spawn();
const ns = ["-t", String(holder.pid), "-U", "-m", "--preserve-credentials"];
const port = 20000 + Math.floor(Math.random() * 20000);
const base = `http://127.0.0.1:${port}`;

function start() {
  const child = new Deno.Command("nsenter", {
    args: [...ns, Deno.execPath(), "run", "-A", args.values.main],
    env: {
      PORT: String(port),
      GRPC_PORT: "off",
      HOST: "127.0.0.1",
      KV_PATH: `${dir}/kv.sqlite3`,
      SHUTDOWN_DRAIN_S: "0",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const log = { text: "" };
  for (const stream of [child.stdout, child.stderr]) {
    (async () => {
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) log.text += chunk;
    })();
  }
  return { child, log };
}

async function waitUntil(probe: () => Promise<boolean>, ms = 60_000): Promise<number> {
  const started = performance.now();
  while (!(await probe().catch(() => false))) {
    if (performance.now() - started > ms) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
  return Math.round(performance.now() - started);
}

const ready = async () => {
  const response = await fetch(`${base}/readyz`);
  await response.body?.cancel();
  return response.status === 200;
};

async function create() {
  const response = await fetch(`${base}/addresses`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(EXAMPLE_INPUT),
  });
  return { status: response.status, body: await response.json() };
}

async function listIds(): Promise<number[]> {
  const ids: number[] = [];
  let cursor: string | null = null;
  do {
    const query: string = cursor === null ? "" : `&cursor=${cursor}`;
    const page = await (await fetch(`${base}/addresses?limit=500${query}`)).json();
    ids.push(...page.addresses.map((a: { id: number }) => a.id));
    cursor = page.nextCursor;
  } while (cursor !== null);
  return ids;
}

function logSize(text: string) {
  const lines = text.split("\n").filter(Boolean);
  const other = lines.filter((l) => !l.includes('"msg":"request"'));
  return {
    bytes: new TextEncoder().encode(text).length,
    lines: lines.length,
    otherLines: other.length,
    otherBytes: new TextEncoder().encode(other.join("\n")).length,
  };
}

const inside = (script: string) =>
  new Deno.Command("nsenter", { args: [...ns, "sh", "-c", script, dir] }).output();

const acknowledged: number[] = [];
const first = start();
const result: Record<string, unknown> = {};
try {
  await waitUntil(ready);
  for (let i = 0; i < 50; i++) {
    const { status, body } = await create();
    if (status === 201) acknowledged.push(body.id);
  }
  const before = first.log.text.length;
  result.logBefore = logSize(first.log.text);
  await inside('head -c 1073741824 /dev/zero > "$0/filler" 2>/dev/null; true');
  const statuses: Record<number, number> = {};
  const end = Date.now() + Number(args.values.seconds) * 1000;
  await Promise.all(Array.from({ length: Number(args.values.concurrency) }, async () => {
    while (Date.now() < end) {
      const { status, body } = await create().catch(() => ({ status: 0, body: null }));
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status === 201) acknowledged.push(body.id);
    }
  }));
  result.statusesWhileFull = statuses;
  const readyz = await fetch(`${base}/readyz`);
  result.readyzWhileFull = { status: readyz.status, body: await readyz.json() };
  const during = first.log.text.length;
  result.logDuring = logSize(first.log.text.slice(before, during));
  await inside('rm "$0/filler"');
  result.readyAgainMs = await waitUntil(ready);
  for (let i = 0; i < 20; i++) {
    const { status, body } = await create();
    if (status === 201) acknowledged.push(body.id);
  }
  result.logAfter = logSize(first.log.text.slice(during));
  result.episodeLines = first.log.text.split("\n").filter((l) => /"msg":"storage /.test(l)).map((
    l,
  ) => JSON.parse(l));
} finally {
  first.child.kill("SIGTERM");
  result.exitCode = (await first.child.status).code;
}
const second = start();
try {
  await waitUntil(ready);
  const listed = new Set(await listIds());
  result.acknowledged = acknowledged.length;
  result.missingAfterRestart = acknowledged.filter((id) => !listed.has(id)).length;
} finally {
  second.child.kill("SIGTERM");
  await second.child.status;
  await holder.stdin.close();
  await holder.status;
  await Deno.remove(dir, { recursive: true });
}
console.log(JSON.stringify(result, null, 2));
