import assert from "node:assert/strict";
import { RECORD_VERSION } from "../../store/addresses/keys.ts";
import { BACKUP_VERSION, BackupLineError } from "../../store/backup/format.ts";
import { importKv, ImportRefused } from "../../store/backup/import.ts";
import { migrateKv } from "../../store/layout/migrate.ts";
import { openAddressStore } from "../../store/addresses/repository.ts";
import { AppError } from "../../lib/errors.ts";
import {
  addressOf,
  backupText,
  type DumpedEntry,
  dumpFile,
  dumpKv,
  killTool,
  ownerOf,
  runTool,
  sameEntries,
  withKv,
  withoutEtags,
  writeLayout1,
} from "../support/kv_tools.ts";
import { addressBook, bearer, V2 } from "../support/requests.ts";
import { spawnServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const SCOPE = "addresses:read addresses:write";

async function tempDir(): Promise<string> {
  return await Deno.makeTempDir({ prefix: "books-backup-" });
}

/**
 * The entries that hold addresses, their owners' counts and the id counter. A backup does not
 * carry Idempotency-Keys (they only make retries safe for a day), so neither do the records'
 * links to them.
 */
function addressData(entries: DumpedEntry[]): DumpedEntry[] {
  // An import gives each address a new version (backups carry no ETags).
  return withoutEtags(entries).filter((e) =>
    ["addresses", "owner_addresses", "owner_counts"].includes(String(e.key[0])) ||
    e.key.join("/") === "counters/addresses"
  ).map((e) => {
    if (e.key[0] !== "addresses" || !("value" in e)) return e;
    const { key: _link, ...record } = e.value as { key?: string };
    return { key: e.key, value: record };
  });
}

Deno.test("export while serving, import into a fresh KV: the server lists exactly what it listed before", async () => {
  const dir = await tempDir();
  const source = `${dir}/source.sqlite3`;
  const target = `${dir}/target.sqlite3`;
  const env = { GRPC_PORT: "off", AUTH_JWT_SECRET: SECRET };
  const tokens = {
    alice: await hsToken({ sub: "alice", scope: SCOPE }),
    bob: await hsToken({ sub: "bob", scope: SCOPE }),
  };
  const auth = (owner: keyof typeof tokens) => bearer(tokens[owner]);
  try {
    const server = await spawnServer({ ...env, KV_PATH: source });
    const before: Record<string, unknown[]> = {};
    let counter: number;
    try {
      for (let i = 0; i < 30; i++) {
        const owner = i % 3 ? "alice" : "bob";
        const key: Record<string, string> = i % 5 === 0 ? { "idempotency-key": `k${i}` } : {};
        const res = await addressBook(server.httpUrl, auth(owner)).create(addressOf(i), key);
        assert.equal(res.status, 201);
        await res.body?.cancel();
      }
      // Deleted ids are not in the file; the counter keeps them from coming back.
      for (const id of [29, 30]) {
        const res = await addressBook(server.httpUrl, auth("alice")).delete(id);
        assert.equal(res.status, 204, `delete ${id}`);
      }
      // A v2 PUT above the counter (30 creations reserved at most 31 ids) moves it there.
      counter = 40;
      const above = await addressBook(server.httpUrl, auth("bob")).put(40, addressOf(40), {
        "content-type": V2,
      });
      assert.equal(above.status, 201);
      for (const owner of ["alice", "bob"] as const) {
        before[owner] = await addressBook(server.httpUrl, auth(owner)).listAll();
      }
      const exported = await runTool("export", ["--out", `${dir}/backup.ndjson`], {
        KV_PATH: source,
      });
      assert.equal(exported.code, 0, exported.stderr);
      assert.match(exported.stderr, /export: 29 addresses, \d+ idempotency keys, id counter 40/);
    } finally {
      await server.stop();
    }
    const file = await Deno.readFile(`${dir}/backup.ndjson`);
    const header = JSON.parse(new TextDecoder().decode(file).split("\n")[0]!);
    assert.deepEqual(
      { format: header.format, version: header.version, source: header.source },
      { format: "books-addresses", version: BACKUP_VERSION, source },
    );
    // Through stdin this time.
    const imported = await runTool("import", [], { KV_PATH: target }, file);
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stderr, /29 written, 0 already there, 0 skipped/);
    assert.deepEqual(addressData(await dumpFile(target)), addressData(await dumpFile(source)));

    const moved = await spawnServer({ ...env, KV_PATH: target });
    try {
      for (const owner of ["alice", "bob"] as const) {
        assert.deepEqual(
          await addressBook(moved.httpUrl, auth(owner)).listAll(),
          before[owner],
          owner,
        );
      }
      const ids = [];
      for (let i = 0; i < 3; i++) {
        ids.push(
          (await (await addressBook(moved.httpUrl, auth("alice")).create(addressOf(i))).json()).id,
        );
      }
      assert.deepEqual(ids, [counter + 1, counter + 2, counter + 3], "no id handed out twice");
    } finally {
      await moved.stop();
    }
    // Importing the same file again changes nothing.
    const dump = await dumpFile(target);
    const again = await runTool("import", ["--in", `${dir}/backup.ndjson`], { KV_PATH: target });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /0 written, 29 already there/);
    assert.deepEqual(await dumpFile(target), dump);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("export during a create load: nothing acknowledged before the export began is missing", async () => {
  const dir = await tempDir();
  const kvPath = `${dir}/kv.sqlite3`;
  const server = await spawnServer({ KV_PATH: kvPath, GRPC_PORT: "off" });
  const acknowledged: { id: number; at: number }[] = [];
  let stop = false;
  const worker = async (w: number) => {
    for (let i = 0; !stop; i++) {
      const res = await addressBook(server.httpUrl).create(addressOf(w * 100_000 + i));
      const body = await res.json();
      // Busy (503) is allowed under load; such a creation was not acknowledged.
      if (res.status === 201) acknowledged.push({ id: body.id, at: performance.now() });
      else assert.equal(res.status, 503, JSON.stringify(body));
    }
  };
  try {
    const load = Promise.all([0, 1, 2, 3].map(worker));
    while (acknowledged.length < 300) await new Promise((r) => setTimeout(r, 10));
    const began = performance.now();
    const exported = await runTool("export", ["--out", `${dir}/backup.ndjson`], {
      KV_PATH: kvPath,
    });
    const during = acknowledged.filter((a) => a.at > began).length;
    stop = true;
    await load;
    assert.equal(exported.code, 0, exported.stderr);
    const lines = (await Deno.readTextFile(`${dir}/backup.ndjson`)).trim().split("\n")
      .map((l) => JSON.parse(l));
    const exportedIds = new Set(
      lines.filter((l) => l.kind === "address").map((l) => l.address.id as number),
    );
    const missing = acknowledged.filter((a) => a.at < began && !exportedIds.has(a.id));
    assert.deepEqual(missing, [], "acknowledged before the export began, but not exported");
    const all = new Set(acknowledged.map((a) => a.id));
    for (const id of exportedIds) assert.ok(all.has(id), `exported ${id}, never acknowledged`);
    assert.ok(during > 0, "creations went on while the export ran");
    const counters = lines.find((l) => l.kind === "counters");
    assert.ok(counters.addressId >= Math.max(...exportedIds));
  } finally {
    stop = true;
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

/** Imports text into a KV in this process (the same code the tool runs). */
function importText(kv: Deno.Kv, text: string, onConflict?: "fail" | "skip") {
  return importKv(kv, "test", () => Promise.resolve(new Blob([text]).stream()), { onConflict });
}

Deno.test("a bad line is reported with its number and nothing of the file is written", async () => {
  const good = backupText(40).split("\n");
  const edit = (line: number, text: string) => good.map((l, i) => i === line - 1 ? text : l);
  const cases: [string, string[], RegExp][] = [
    ["broken JSON", edit(30, '{"kind":"address",'), /^line 30: not JSON/],
    [
      "a wrong member",
      edit(12, JSON.stringify({ kind: "address", owner: 7, address: addressOf(11) })),
      /^line 12: owner /,
    ],
    [
      "an id twice",
      edit(20, JSON.stringify({ kind: "address", owner: "x", address: addressOf(5) })),
      /^line 20: id 5 appears a second time \(first on line 6\)/,
    ],
    ["another format", edit(1, '{"format":"csv","version":1}'), /^line 1: not the header/],
    [
      "a newer format version",
      edit(1, `{"format":"books-addresses","version":${BACKUP_VERSION + 1}}`),
      new RegExp(`^line 1: format version ${BACKUP_VERSION + 1} is newer`),
    ],
    [
      "an idempotency line before an address",
      [
        ...good.slice(0, 5),
        JSON.stringify({
          kind: "idempotency",
          owner: "x",
          key: "k",
          address: addressOf(1),
          etag: '"AAAAAAAAAAAAAAAAAAAAAA"',
          expiresAt: Date.now() + 60_000,
        }),
        ...good.slice(5),
      ],
      /^line 7: an address after the idempotency lines/,
    ],
    ["cut off (no end line)", good.slice(0, 25), /^line 25: the file ends here without its end/],
    [
      "an end line that miscounts",
      edit(43, JSON.stringify({ kind: "end", addresses: 41 })),
      /^line 43: the end line counts 41 addresses, the file has 40/,
    ],
    ["a line after the end", [...good.slice(0, 43), "{}"], /^line 44: a line after the end/],
  ];
  using kv = await Deno.openKv(":memory:");
  await importText(kv, backupText(3));
  const before = await dumpKv(kv);
  for (const [what, lines, message] of cases) {
    await assert.rejects(importText(kv, lines.join("\n")), (e) => {
      assert.ok(e instanceof BackupLineError, `${what}: ${e}`);
      assert.match(e.message, message, what);
      return true;
    });
    assert.deepEqual(await dumpKv(kv), before, `${what}: nothing written`);
  }
  // The tool says the same in one line and exits 1.
  const dir = await tempDir();
  try {
    await Deno.writeTextFile(`${dir}/bad.ndjson`, cases[0]![1].join("\n"));
    const run = await runTool("import", ["--in", `${dir}/bad.ndjson`], {
      KV_PATH: `${dir}/kv.sqlite3`,
    });
    assert.equal(run.code, 1);
    assert.match(run.stderr.trim().split("\n").at(-1)!, /^import: line 30: not JSON/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a file that conflicts with the target is refused unless --on-conflict=skip", async () => {
  const dir = await tempDir();
  const kvPath = `${dir}/kv.sqlite3`;
  try {
    await Deno.writeTextFile(`${dir}/first.ndjson`, backupText(50));
    assert.equal(
      (await runTool("import", ["--in", `${dir}/first.ndjson`], { KV_PATH: kvPath })).code,
      0,
    );
    // The second file holds ids 1..60, of which 10 and 20 hold other addresses.
    const second = backupText(60).split("\n").map((line) => {
      const parsed = line ? JSON.parse(line) : undefined;
      if (parsed?.kind === "address" && [10, 20].includes(parsed.address.id)) {
        return JSON.stringify({ ...parsed, address: { ...parsed.address, name: "Someone else" } });
      }
      return line;
    });
    await Deno.writeTextFile(`${dir}/second.ndjson`, second.join("\n"));
    const before = await dumpFile(kvPath);
    for (const args of [[], ["--on-conflict=fail"]]) {
      const refused = await runTool("import", ["--in", `${dir}/second.ndjson`, ...args], {
        KV_PATH: kvPath,
      });
      assert.equal(refused.code, 1);
      assert.match(
        refused.stderr,
        /2 address\(es\) of the file conflict .* first line 11 \(id 10\), line 21 \(id 20\); nothing was imported/,
      );
      assert.deepEqual(await dumpFile(kvPath), before, "nothing written, not even ids 51-60");
    }
    const skipped = await runTool(
      "import",
      ["--in", `${dir}/second.ndjson`, "--on-conflict=skip"],
      { KV_PATH: kvPath },
    );
    assert.equal(skipped.code, 0, skipped.stderr);
    assert.match(skipped.stderr, /10 written, 48 already there, 2 skipped as conflicting/);
    await withKv(kvPath, async (kv) => {
      const [kept, index] = await kv.getMany([
        ["addresses", 10],
        ["owner_addresses", ownerOf(55), 55],
      ]);
      const { etag, ...record } = kept.value as { etag: string };
      assert.match(etag, /^"[A-Za-z0-9_-]{22}"$/);
      assert.deepEqual(record, { v: RECORD_VERSION, owner: ownerOf(10), address: addressOf(10) });
      assert.deepEqual((index.value as { address: unknown }).address, addressOf(55));
      assert.equal(Number((await kv.get<Deno.KvU64>(["counters", "addresses"])).value), 60);
    });
    const usage = await runTool("import", ["--on-conflict=overwrite"], { KV_PATH: kvPath });
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /invalid --on-conflict=overwrite: must be fail or skip/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an import into a KV that needs a migration is refused, naming deno task migrate", async () => {
  using kv = await Deno.openKv(":memory:");
  await writeLayout1(kv, 3);
  await assert.rejects(importText(kv, backupText(3)), /run `deno task migrate` first/);
  await migrateKv(kv, "test");
  const summary = await importText(kv, backupText(3));
  // Layout 1 stored bare (unowned) addresses; a file naming another owner for them conflicts.
  assert.equal(summary.present + summary.written, 3);
  await assert.rejects(importText(kv, backupText(20).replace('"owner":"alice"', '"owner":"x"')), (
    e,
  ) => e instanceof ImportRefused);
});

Deno.test("a file with ids above its counter (exported by layout 2) raises the counter past them: no id is handed out or PUT again", async () => {
  using kv = await Deno.openKv(":memory:");
  // Layout 2 let a v2 PUT create above the counter without moving it: ids 4 and 5 here.
  await importText(kv, backupText(5, 3));
  assert.equal(Number((await kv.get<Deno.KvU64>(["counters", "addresses"])).value), 5);
  const store = openAddressStore(kv, { maxPerOwner: Infinity });
  await assert.rejects(
    store.putAt("someone", 5, addressOf(5)),
    (e) => e instanceof AppError && e.code === "id-taken",
  );
  assert.equal((await store.create("someone", addressOf(6))).address.id, 6);
});

Deno.test("kill -9 in the middle of deno task import, then again: the same KV as one uninterrupted import", async () => {
  const n = 30_000;
  const dir = await tempDir();
  const file = `${dir}/backup.ndjson`;
  const [path, reference] = [`${dir}/kv.sqlite3`, `${dir}/reference.sqlite3`];
  try {
    await Deno.writeTextFile(file, backupText(n, n + 500));
    const killed = await killTool("import", ["--in", file], { KV_PATH: path }, /wrote \d+ of/);
    assert.ok(killed.killed, `the import ended before the kill:\n${killed.stderr}`);
    const midway = await dumpFile(path);
    const written = midway.filter((e) => e.key[0] === "addresses").length;
    assert.ok(written > 0 && written < n, `${written} of ${n} written when killed`);
    // Never half an address: every record has its index entry, and the counts say so.
    assert.equal(midway.filter((e) => e.key[0] === "owner_addresses").length, written);
    const counted = midway.filter((e) => e.key[0] === "owner_counts")
      .reduce((sum, e) => sum + Number("u64" in e ? e.u64 : 0), 0);
    assert.equal(counted, written);

    const resumed = await runTool("import", ["--in", file], { KV_PATH: path });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stderr, new RegExp(`${n - written} written, ${written} already there`));
    const clean = await runTool("import", ["--in", file], { KV_PATH: reference });
    assert.equal(clean.code, 0, clean.stderr);
    sameEntries(withoutEtags(await dumpFile(path)), withoutEtags(await dumpFile(reference)));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// The default suite moves a few thousand addresses; BACKUP_SIZE=100000 is the size
// docs/operations.md states a time for (run it on its own: it takes a while).
const SIZE = Number(Deno.env.get("BACKUP_SIZE") ?? 5_000);

Deno.test(`${SIZE} addresses: deno task export, then deno task import into a fresh KV, the same data`, async () => {
  const dir = await tempDir();
  const [source, target] = [`${dir}/source.sqlite3`, `${dir}/target.sqlite3`];
  try {
    await withKv(source, async (kv) => {
      await writeLayout1(kv, SIZE);
      await migrateKv(kv, "source");
    });
    let started = performance.now();
    const exported = await runTool("export", ["--out", `${dir}/backup.ndjson`], {
      KV_PATH: source,
    });
    const exportSeconds = (performance.now() - started) / 1000;
    assert.equal(exported.code, 0, exported.stderr);
    started = performance.now();
    const imported = await runTool("import", ["--in", `${dir}/backup.ndjson`], {
      KV_PATH: target,
    });
    const importSeconds = (performance.now() - started) / 1000;
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stderr, new RegExp(`${SIZE} written`));
    assert.deepEqual(addressData(await dumpFile(target)), addressData(await dumpFile(source)));
    const bytes = (await Deno.stat(`${dir}/backup.ndjson`)).size;
    console.log(
      `backup of ${SIZE} addresses (${(bytes / 1e6).toFixed(1)} MB): export ` +
        `${exportSeconds.toFixed(1)} s, import ${importSeconds.toFixed(1)} s (processes included)`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("export writes its file only when complete: a failing export leaves no file", async () => {
  const dir = await tempDir();
  try {
    await withKv(`${dir}/kv.sqlite3`, (kv) => kv.set(["meta", "layout"], { version: 99 }));
    const run = await runTool("export", ["--out", `${dir}/backup.ndjson`], {
      KV_PATH: `${dir}/kv.sqlite3`,
    });
    assert.equal(run.code, 1);
    const names = [];
    for await (const e of Deno.readDir(dir)) names.push(e.name);
    assert.ok(!names.some((n) => n.startsWith("backup")), names.join(", "));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("import --in reads a file written on another system (CRLF line ends)", async () => {
  using kv = await Deno.openKv(":memory:");
  const summary = await importText(kv, backupText(5).replaceAll("\n", "\r\n"));
  assert.equal(summary.written, 5);
  const entry = await kv.get<{ address: unknown }>(["owner_addresses", ownerOf(5), 5]);
  assert.deepEqual(entry.value?.address, addressOf(5));
});
