/**
 * Running the operator tools (ops/export.ts, import.ts, migrate.ts) as the processes an
 * operator runs, and building KV files and backup files for them.
 */
import assert from "node:assert/strict";
import { type DumpedEntry, dumpKv } from "../fixtures/layout1_generate.ts";
import { childDenoFlags } from "./process.ts";
import { type Address, taggedInput } from "./requests.ts";

export { type DumpedEntry, dumpKv };

const TOOLS = new URL("../../ops/", import.meta.url).pathname;

/** What a finished tool run printed. */
interface ToolRun {
  code: number;
  stdout: string;
  stderr: string;
}

function command(tool: string, args: string[], env: Record<string, string>, stdin: boolean) {
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-env",
      "--allow-read",
      "--allow-write",
      "--allow-net",
      ...childDenoFlags(),
      `${TOOLS}${tool}.ts`,
      ...args,
    ],
    env,
    stdin: stdin ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  });
}

/** Runs `deno task <tool>` to its end (with `stdin` piped in when given). */
export async function runTool(
  tool: "export" | "import" | "migrate",
  args: string[],
  env: Record<string, string>,
  stdin?: Uint8Array,
): Promise<ToolRun> {
  const child = command(tool, args, env, stdin !== undefined).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(stdin);
    await writer.close();
  }
  const out = await child.output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/**
 * Runs a tool and kills it with SIGKILL as soon as its stderr has a line matching `after` (its
 * first progress line: at least one batch committed). Resolves to what it printed, and whether
 * it was still running when killed.
 */
export async function killTool(
  tool: "import" | "migrate",
  args: string[],
  env: Record<string, string>,
  after: RegExp,
): Promise<{ stderr: string; killed: boolean }> {
  const child = command(tool, args, env, false).spawn();
  const stdout = child.stdout.cancel();
  let stderr = "";
  let killed = false;
  const decoder = new TextDecoder();
  for await (const chunk of child.stderr) {
    stderr += decoder.decode(chunk, { stream: true });
    if (!killed && after.test(stderr)) {
      try {
        child.kill("SIGKILL");
        killed = true;
      } catch { /* it had ended */ }
    }
  }
  const status = await child.status;
  await stdout;
  return { stderr, killed: killed && status.signal === "SIGKILL" };
}

/** Runs `write` on a KV file and closes it. */
export async function withKv<T>(path: string, write: (kv: Deno.Kv) => Promise<T>): Promise<T> {
  const kv = await Deno.openKv(path);
  try {
    return await write(kv);
  } finally {
    kv.close();
  }
}

/** Every entry of a KV file, in key order (values only: versionstamps differ between runs). */
export function dumpFile(path: string): Promise<DumpedEntry[]> {
  return withKv(path, dumpKv);
}

/** What stands for every ETag in `withoutEtags`. */
export const AN_ETAG = "<etag>";

/**
 * A dump with every address version's ETag (random, made at each write) replaced by `AN_ETAG`,
 * the change records' commit times left out,
 * so two KVs written alike compare equal; the page tokens' key (random too) is left out. Checks
 * first what the ETags must be: strong and quoted, each record's that of its index entry, no two
 * versions alike.
 */
export function withoutEtags(entries: readonly DumpedEntry[]): DumpedEntry[] {
  const byRecord = new Map<number, string>();
  const byIndex = new Map<number, string>();
  const out: DumpedEntry[] = [];
  for (const e of entries) {
    if (e.key.join("/") === "meta/page_token_key") continue;
    // A change record: its ETag is its address's (or that of a version since replaced), and it
    // is stamped with the time it was committed.
    if (e.key[0] === "feed_events" && "value" in e) {
      const { at: _, ...change } = e.value as { at: number; etag?: string };
      out.push({ key: e.key, value: change.etag ? { ...change, etag: AN_ETAG } : change });
      continue;
    }
    if (
      !("value" in e) || typeof e.value !== "object" || e.value === null || !("etag" in e.value)
    ) {
      out.push(e);
      continue;
    }
    const { etag } = e.value as { etag: string };
    assert.match(etag, /^"[A-Za-z0-9_-]{22}"$/, JSON.stringify(e.key));
    if (e.key[0] === "addresses") byRecord.set(e.key[1] as number, etag);
    if (e.key[0] === "owner_addresses") byIndex.set(e.key[2] as number, etag);
    out.push({ key: e.key, value: { ...e.value, etag: AN_ETAG } });
  }
  assert.deepEqual(byIndex, byRecord, "each index entry has its record's ETag");
  assert.equal(new Set(byRecord.values()).size, byRecord.size, "no two addresses share an ETag");
  return out;
}

/**
 * Asserts two dumps equal, naming the first entry that differs (a diff of whole dumps of tens of
 * thousands of entries takes more memory than a test process has).
 */
export function sameEntries(actual: readonly DumpedEntry[], expected: readonly DumpedEntry[]) {
  for (let i = 0; i < Math.max(actual.length, expected.length); i++) {
    assert.deepEqual(actual[i], expected[i], `entry ${i} of ${expected.length}`);
  }
}

/** The owner of synthetic address `id`: a few owners, the anonymous one among them. */
export function ownerOf(id: number): string {
  return ["", "alice", "bob", "carol", "d\u00e9sir\u00e9e"][id % 5]!;
}

/** The synthetic address with this id (valid as a request body too). */
export function addressOf(id: number): Address {
  return { id, ...taggedInput(id) };
}

/**
 * Writes `n` addresses in layout 1 (what the server before layout versions wrote: `{owner,
 * address}` with its owner-index entry; every seventh one bare, as stored before ownership),
 * the id counter, NEXT_TAKEN and the catalogue marker, in big batches.
 */
export async function writeLayout1(kv: Deno.Kv, n: number): Promise<void> {
  for (let start = 1; start <= n; start += 300) {
    const op = kv.atomic();
    for (let id = start; id < start + 300 && id <= n; id++) {
      const address = addressOf(id);
      if (id % 7 === 0) op.set(["addresses", id], address);
      else {
        op.set(["addresses", id], { owner: ownerOf(id), address });
        op.set(["owner_addresses", ownerOf(id), id], address);
      }
    }
    const result = await op.commit();
    if (!result.ok) throw new Error("could not write the synthetic KV");
  }
  await kv.set(["counters", "addresses"], new Deno.KvU64(BigInt(n)));
  await kv.set(["counters", "addresses_next_taken"], new Deno.KvU64(0n));
  await kv.set(["catalogue", "seeded"], { count: 0, at: "2026-01-01T00:00:00.000Z" });
}

/** A backup file of `n` synthetic addresses (ids 1..n, the counter at `counter`). */
export function backupText(n: number, counter = n, source = "synthetic"): string {
  const lines = [JSON.stringify({
    format: "books-addresses",
    version: 1,
    source,
    layout: 2,
    exportedAt: "2026-01-01T00:00:00.000Z",
  })];
  for (let id = 1; id <= n; id++) {
    lines.push(JSON.stringify({ kind: "address", owner: ownerOf(id), address: addressOf(id) }));
  }
  lines.push(JSON.stringify({ kind: "counters", addressId: counter }));
  lines.push(JSON.stringify({ kind: "end", addresses: n }));
  return lines.join("\n") + "\n";
}
