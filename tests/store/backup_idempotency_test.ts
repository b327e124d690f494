/**
 * Idempotency-Key records travel in the backup (format version 2, issue 35): a creation made
 * with a key over REST (`Idempotency-Key`) and one over gRPC (`request_id`), `deno task export`,
 * `deno task import` into a fresh KV, a server started on it: the same key replays the same
 * address in both styles instead of creating a second one. A record that expired before the
 * import is dropped, one of an orphan (its address deleted) keeps counting, and a version 1 file
 * (no idempotency lines) still imports.
 */
import assert from "node:assert/strict";
import { EXAMPLE_INPUT } from "../../lib/address.ts";
import { countKey, idempotencyKey, type IdempotencyRecord } from "../../store/addresses/keys.ts";
import { importKv } from "../../store/backup/import.ts";
import { addressBook, idempotencyKey as keyHeader } from "../support/requests.ts";
import { addressClient, grpcTransport } from "../support/rpc_clients.ts";
import { startTestServer } from "../support/server.ts";
import { backupText, runTool, withKv } from "../support/kv_tools.ts";

const OTHER = { ...EXAMPLE_INPUT, city: "Paris" };

Deno.test("a retry after export and import into a fresh KV replays, over REST and gRPC", async () => {
  const dir = await Deno.makeTempDir({ prefix: "backup-keys-" });
  const source = `${dir}/source.sqlite3`;
  const target = `${dir}/target.sqlite3`;
  try {
    const first = await startTestServer({ KV_PATH: source });
    let rest: { id: number };
    let grpcId: bigint;
    try {
      const created = await addressBook(first.httpUrl).create(EXAMPLE_INPUT, keyHeader("rest-1"));
      assert.equal(created.status, 201);
      rest = await created.json();
      const client = addressClient(grpcTransport(first.grpcUrl!));
      grpcId = (await client.createAddress({ address: OTHER, requestId: "grpc-1" })).id;
      // An orphan: created with a key, then deleted; its record still replays and counts.
      const gone = await addressBook(first.httpUrl).create(OTHER, keyHeader("gone-1"));
      const goneId = (await gone.json()).id;
      assert.equal((await addressBook(first.httpUrl).delete(goneId)).status, 204);
    } finally {
      await first.shutdown();
    }

    const exported = await runTool("export", ["--out", `${dir}/backup.ndjson`], {
      KV_PATH: source,
    });
    assert.equal(exported.code, 0, exported.stderr);
    assert.match(exported.stderr, /export: 2 addresses, 3 idempotency keys/);
    const lines = (await Deno.readTextFile(`${dir}/backup.ndjson`)).trim().split("\n")
      .map((line) => JSON.parse(line));
    assert.equal(lines[0].version, 2);
    const keyLines = lines.filter((line) => line.kind === "idempotency");
    assert.deepEqual(keyLines.map((line) => line.key).sort(), ["gone-1", "grpc-1", "rest-1"]);
    for (const line of keyLines) {
      // Its expiry, about 24 hours from its creation.
      assert.ok(line.expiresAt > Date.now() + 23 * 3600_000, JSON.stringify(line));
    }
    assert.equal(keyLines.find((line) => line.key === "gone-1").orphan, true);

    const imported = await runTool("import", ["--in", `${dir}/backup.ndjson`], {
      KV_PATH: target,
    });
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stderr, /idempotency keys: 3 written, 0 expired/);
    // The orphan counts toward its owner's quota, as it did in the source.
    const count = await withKv(target, (kv) => kv.get<Deno.KvU64>(countKey("")));
    assert.equal(count.value?.value, 3n);

    const moved = await startTestServer({ KV_PATH: target });
    try {
      const book = addressBook(moved.httpUrl);
      const again = await book.create(EXAMPLE_INPUT, keyHeader("rest-1"));
      assert.equal(again.status, 201);
      assert.equal(again.headers.get("idempotent-replayed"), "true");
      assert.equal((await again.json()).id, rest.id);
      // The REST key replays over gRPC too (one store of keys), and the gRPC one.
      const client = addressClient(grpcTransport(moved.grpcUrl!));
      const viaGrpc = await client.createAddress({ address: EXAMPLE_INPUT, requestId: "rest-1" });
      assert.equal(Number(viaGrpc.id), rest.id);
      const grpcAgain = await client.createAddress({ address: OTHER, requestId: "grpc-1" });
      assert.equal(grpcAgain.id, grpcId);
      // Another body with a carried key is refused as before the move.
      const reused = await book.create(OTHER, keyHeader("rest-1"));
      assert.equal(reused.status, 422);
      await reused.body?.cancel();
      assert.equal((await book.listAll()).length, 2, "no address was created twice");
    } finally {
      await moved.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

Deno.test("a record expired since the export is dropped; a version 1 file imports", async () => {
  const dir = await Deno.makeTempDir({ prefix: "backup-keys-" });
  try {
    const v1 = backupText(2);
    assert.match(v1.split("\n")[0]!, /"version":1/);
    const address = JSON.parse(v1.split("\n")[1]!).address;
    const line = (key: string, expiresAt: number) =>
      JSON.stringify({
        kind: "idempotency",
        owner: JSON.parse(v1.split("\n")[1]!).owner,
        key,
        address,
        etag: '"AAAAAAAAAAAAAAAAAAAAAA"',
        expiresAt,
      });
    const rows = v1.trim().split("\n");
    const end = JSON.parse(rows.pop()!);
    const counters = rows.pop()!;
    const v2 = [
      rows[0]!.replace('"version":1', '"version":2'),
      ...rows.slice(1),
      line("stale", Date.now() - 1000),
      line("fresh", Date.now() + 3600_000),
      counters,
      JSON.stringify({ ...end, idempotency: 2 }),
    ].join("\n") + "\n";
    const open = (text: string) => () =>
      Promise.resolve(new Blob([text]).stream() as ReadableStream<Uint8Array>);
    const owner = JSON.parse(v1.split("\n")[1]!).owner;
    await withKv(`${dir}/v2.sqlite3`, async (kv) => {
      const summary = await importKv(kv, "v2", open(v2));
      assert.deepEqual(summary.idempotency, { total: 2, written: 1, expired: 1, kept: 0 });
      const fresh = await kv.get<IdempotencyRecord>(idempotencyKey(owner, "fresh"));
      assert.equal(fresh.value?.address.id, address.id);
      assert.equal((await kv.get(idempotencyKey(owner, "stale"))).value, null);
    });
    await withKv(`${dir}/v1.sqlite3`, async (kv) => {
      const summary = await importKv(kv, "v1", open(v1));
      assert.equal(summary.written, 2);
      assert.equal(summary.idempotency.total, 0);
    });
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
