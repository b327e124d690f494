import assert from "node:assert/strict";
import { createLogger } from "../../lib/log.ts";
import { EXAMPLE_INPUT } from "../../lib/address.ts";
import { createEpisode } from "../../store/kv/storage_episode.ts";
import { startTestServer } from "../support/server.ts";
import { untilStatus } from "../support/process.ts";
import { addressBook, answerOf, graphql } from "../support/requests.ts";
import { waitForLine } from "../support/logs.ts";

/**
 * A KV handle whose writes (and, when asked, reads) fail the way SQLite reports a full disk or a
 * broken one, while `fault` is set: the store boundary, under the server's own storage guard.
 */
function faultyDisk(kv: Deno.Kv, fault: { writes?: string; reads?: string }): Deno.Kv {
  const fail = (message: string | undefined) => {
    if (message !== undefined) throw new TypeError(message);
  };
  return new Proxy(kv, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (typeof value !== "function") return value;
      if (name === "atomic") {
        return () => {
          const op = target.atomic();
          const faulty: Deno.AtomicOperation = new Proxy(op, {
            get(o, n) {
              if (n === "commit") {
                return async () => {
                  fail(fault.writes);
                  return await o.commit();
                };
              }
              const v = Reflect.get(o, n, o);
              return typeof v === "function"
                ? (...args: unknown[]) => (v.apply(o, args) === o ? faulty : v.apply(o, args))
                : v;
            },
          });
          return faulty;
        };
      }
      if (name === "set" || name === "delete") {
        return async (...args: unknown[]) => {
          fail(fault.writes);
          return await value.apply(target, args);
        };
      }
      if (name === "get" || name === "getMany") {
        return async (...args: unknown[]) => {
          fail(fault.reads);
          return await value.apply(target, args);
        };
      }
      if (name === "list") {
        // As KV does: the iterator fails when it reads, not when it is made.
        return (...args: unknown[]) => {
          const iterator = value.apply(target, args);
          return new Proxy(iterator, {
            get(i, n) {
              if (n === "next") {
                return async () => {
                  fail(fault.reads);
                  return await i.next();
                };
              }
              const v = Reflect.get(i, n, i);
              return typeof v === "function" ? v.bind(i) : v;
            },
          });
        };
      }
      return value.bind(target);
    },
  });
}

const A = { name: "Ada", city: "London", postalCode: "W1J 7NT" };
const B = { name: "Bea", city: "Bonn", postalCode: "53111" };

Deno.test("disk full under the store: 503 storage-unavailable with Retry-After, readiness 503, one log line each way, nothing lost", async () => {
  const fault: { writes?: string; reads?: string } = {};
  const server = await startTestServer(
    { GRPC_PORT: "off" },
    { wrapKv: (kv) => faultyDisk(kv, fault) },
  );
  const base = server.httpUrl;
  const api = addressBook(base);
  try {
    const first = await api.create(A);
    assert.equal(first.status, 201);
    const a = await first.json();
    assert.equal((await fetch(`${base}/readyz`)).status, 200);

    fault.writes = "database or disk is full";
    const refused = await api.create(B);
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("retry-after"), "5");
    assert.ok(refused.headers.get("x-request-id"));
    const body = await refused.json();
    assert.equal(body.errors.length, 1);
    assert.equal(body.errors[0].error, "storage-unavailable");
    assert.equal(
      body.errors[0].message,
      "Your data cannot be saved at the moment. Please try again later.",
    );
    assert.match(body.errors[0].detail, /disk full/);
    assert.match(body.errors[0].help, /\/docs\/errors#storage-unavailable$/);

    const german = await api.create(B, { "accept-language": "de" });
    assert.equal(german.status, 503);
    assert.match((await german.json()).errors[0].message, /nicht gespeichert werden/);
    const problem = await api.create(B, { accept: "application/problem+json" });
    assert.equal(problem.status, 503);
    assert.equal(problem.headers.get("content-type"), "application/problem+json");
    assert.match((await problem.json()).type, /#storage-unavailable$/);

    // Every kind of write is refused the same way, and changes nothing.
    const put = await api.put(a.id, B);
    const patch = await api.patch(a.id, { city: "Paris" });
    const del = await api.delete(a.id);
    for (const response of [put, patch, del]) {
      assert.equal(response.status, 503);
      assert.equal(response.headers.get("retry-after"), "5");
      assert.equal((await response.json()).errors[0].error, "storage-unavailable");
    }
    // GraphQL's mutation fails as its field, with the same code and when to retry.
    const mutation = await answerOf(
      await graphql(base, {
        query: "mutation ($input: AddressInput!) { createAddress(input: $input) { id } }",
        variables: { input: B },
      }),
    );
    assert.equal(mutation.status, 200);
    assert.deepEqual(mutation.body.data, { createAddress: null });
    assert.deepEqual(mutation.body.errors[0].extensions, {
      code: "storage-unavailable",
      retryAfter: 5,
    });
    assert.match(mutation.body.errors[0].message, /disk full/);
    // Reads go on working.
    const read = await fetch(`${base}/addresses/${a.id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(await read.json(), a);

    const notReady = await fetch(`${base}/readyz`);
    assert.equal(notReady.status, 503);
    assert.equal((await notReady.json()).errors[0].error, "storage-unavailable");

    // Space is back: the probe write turns readiness to 200 with no client writing.
    delete fault.writes;
    await untilStatus(`${base}/readyz`, 200, "readiness after the fault");
    const after = await api.create(B);
    assert.equal(after.status, 201);
    const b = await after.json();
    const listed = await (await fetch(`${base}/addresses`)).json();
    assert.deepEqual(listed.addresses, [a, b], "what was acknowledged, and nothing refused");

    await waitForLine(() => server.logs, "storage works again");
    const started = server.logs.filter((l) => l.msg === "storage failing");
    assert.equal(started.length, 1, "one line when it starts");
    assert.equal(started[0]!.level, "error");
    assert.equal(started[0]!.reason, "disk full");
    assert.equal(started[0]!.error, "database or disk is full");
    const ended = server.logs.filter((l) => l.msg === "storage works again");
    assert.equal(ended.length, 1, "one line when it ends");
    // Three POSTs, the PUT, the PATCH, the DELETE and the GraphQL create each failed one commit.
    assert.equal(ended[0]!.failures, 7);
    assert.ok(server.logs.every((l) => l.stack === undefined), "no stack trace in the log");
    assert.ok(server.logs.every((l) => l.level !== "error" || l.msg === "storage failing"));
  } finally {
    await server.close();
  }
});

Deno.test("a storage fault on a read is 503 storage-unavailable too, never a 500", async () => {
  const fault: { writes?: string; reads?: string } = {};
  const server = await startTestServer(
    { GRPC_PORT: "off" },
    { wrapKv: (kv) => faultyDisk(kv, fault) },
  );
  const base = server.httpUrl;
  try {
    const a = await (await addressBook(base).create(A)).json();
    fault.reads = "disk I/O error";
    for (const path of [`/addresses/${a.id}`, "/addresses"]) {
      const response = await fetch(`${base}${path}`);
      assert.equal(response.status, 503, path);
      assert.equal(response.headers.get("retry-after"), "5");
      assert.equal((await response.json()).errors[0].error, "storage-unavailable");
    }
    // The catalogue is in memory: books are served.
    assert.equal((await fetch(`${base}/rest/books`)).status, 200);
    const ready = await fetch(`${base}/readyz`);
    assert.equal(ready.status, 503);
    assert.equal((await ready.json()).errors[0].error, "storage-unavailable");
    delete fault.reads;
    await untilStatus(`${base}/readyz`, 200, "readiness after the fault");
    assert.deepEqual(await (await fetch(`${base}/addresses/${a.id}`)).json(), a);
    assert.deepEqual(
      server.logs.filter((l) => l.msg === "storage failing").map((l) => [l.reason, l.op]),
      [["I/O error", "read"]],
    );
    assert.ok(server.logs.every((l) => l.stack === undefined));
  } finally {
    await server.close();
  }
});

Deno.test("a fault that lasts is counted at growing intervals, not logged per request", () => {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    write: (text) => text.split("\n").filter(Boolean).forEach((l) => lines.push(JSON.parse(l))),
  });
  let clock = 0;
  const episode = createEpisode(logger, { still: "still", ended: "ended" }, {
    firstReportMs: 10,
    maxReportMs: 40,
    now: () => clock,
  });
  episode.tick();
  episode.start("began", { reason: "disk full" });
  episode.start("began", { reason: "disk full" });
  for (let t = 1; t <= 100; t++) {
    clock = t;
    episode.count();
    episode.tick();
  }
  episode.end();
  episode.end();
  logger.flush();
  assert.deepEqual(lines.map((l) => [l.msg, l.failures]), [
    ["began", undefined],
    ["still", 10], // at 10 ms
    ["still", 30], // 20 ms later
    ["still", 70], // 40 ms later, the cap
    ["ended", 100],
  ]);
  assert.equal(lines[0]!.level, "error");
  assert.equal(lines[4]!.durationMs, 100);
  assert.equal(lines[4]!.reason, "disk full");
});

Deno.test("a KV file whose write lock cannot be made: the server starts, says so once, and writes", async () => {
  const dir = await Deno.makeTempDir({ prefix: "books-lock-" });
  const kvPath = `${dir}/kv.sqlite3`;
  // A directory where the lock file would go: opening it for writing fails whoever runs the test.
  await Deno.mkdir(`${kvPath}.write-lock`);
  const server = await startTestServer({ KV_PATH: kvPath, GRPC_PORT: "off" });
  try {
    const warned = server.logs.filter((l) =>
      l.msg === "kv write lock unavailable; concurrent writers poll"
    );
    assert.equal(warned.length, 1);
    const created = await fetch(`${server.httpUrl}/addresses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(EXAMPLE_INPUT),
    });
    assert.equal(created.status, 201);
    await created.body?.cancel();
    assert.equal((await fetch(`${server.httpUrl}/readyz`)).status, 200);
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
});
