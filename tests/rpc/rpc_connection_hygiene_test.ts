import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { GrpcListenerConfig } from "../../rpc/listener/grpc_listener.ts";
import { clientOf } from "../../rpc/listener/connection_guard.ts";
import { ConfigError, loadConfig } from "../../lib/config.ts";
import { waitFor } from "../support/process.ts";
import { booksClient, grpcTransport, http2Session } from "../support/rpc_clients.ts";
import { startTestListener, startTestServer } from "../support/server.ts";
import {
  clientStart,
  connectRaw,
  Flag,
  frame,
  FrameType,
  grpcCall,
  grpcCallHeaders,
  headerBlock,
  PREFACE,
  type RawConnection,
} from "../support/h2_raw.ts";

// Linux routes all of 127.0.0.0/8 to the loopback interface: two client addresses on one host.
const FLOODER = "127.0.0.1";
const OTHER = "127.0.0.2";

/** A listener on every interface (for the clients' several loopback addresses). */
async function listen(options: Partial<GrpcListenerConfig> = {}) {
  const listener = await startTestListener({ host: "0.0.0.0", ...options }, { level: "info" });
  return {
    ...listener,
    /** Lines other than the per-call `rpc` access log. */
    noise: () => (listener.flush(), listener.logs.filter((l) => l.msg !== "rpc")),
    shutdown: () => listener.shutdown(1000),
  };
}

/** A gRPC client (Connect over node:http2) on its own connection from `localAddress`. */
function clientFrom(url: string, localAddress: string) {
  const client = booksClient(grpcTransport(url, http2Session(url, { localAddress })));
  return {
    books: async () => (await client.books({}, { timeoutMs: 5000 })).book.map((b) => b.title),
  };
}

async function openMany(url: string, count: number, localAddress: string, start?: Buffer) {
  const conns = await Promise.all(
    Array.from({ length: count }, () => connectRaw(url, { localAddress })),
  );
  if (start) { for (const c of conns) c.write(start); }
  return conns;
}

const open = (conns: RawConnection[]) => conns.filter((c) => !c.isClosed()).length;

Deno.test("one address's flood of connections that never send the preface does not keep another out", async () => {
  const server = await listen({
    maxConnections: 1000,
    maxConnectionsPerClient: 100,
    handshakeTimeoutMs: 2000,
  });
  const other = clientFrom(server.url, OTHER);
  let flood: RawConnection[] = [];
  try {
    flood = await openMany(server.url, 1000, FLOODER);
    // Over its own cap, the flooding address's connections are closed at once...
    await waitFor(
      "the flood cut to the per-client cap",
      () => open(flood) <= 100 ? true : undefined,
    );
    // ...and another address is served while the rest wait for their preface.
    assert.deepEqual(await other.books(), ["Kindred"]);
    assert.ok(open(flood) > 0, "the flood's connections within the cap are still waiting");
    // The preface never comes: each is closed once the handshake time is up.
    await waitFor("the handshake timeout", () => open(flood) === 0 ? true : undefined);
    assert.deepEqual(await other.books(), ["Kindred"]);
  } finally {
    for (const c of flood) c.socket.destroy();
    await server.shutdown();
  }
  const noise = server.noise();
  // A thousand refusals make a few summary lines, not a thousand.
  assert.ok(noise.length <= 5, JSON.stringify(noise));
  const refused = noise.filter((l) => l.msg === "grpc connections refused");
  const sum = (reason: string) =>
    refused.reduce((n, l) => n + Number((l.refused as Record<string, number>)[reason] ?? 0), 0);
  // Each flood connection was refused once: over the cap at once, or when its handshake time
  // was up (at least the hundred within the cap; more if the flood took that long to open).
  assert.equal(sum("client-limit") + sum("handshake-timeout"), 1000);
  assert.ok(sum("handshake-timeout") >= 100);
  assert.ok(refused.every((l) => l.topClient === FLOODER && l.level === "warn"));
});

/**
 * Whether the server took the connection: it acknowledges the client's SETTINGS, or closes the
 * connection without (a refused connection is closed before anything it sent is read).
 */
function admitted(conn: RawConnection): Promise<boolean> {
  return conn.waitFor((f) => f.type === FrameType.SETTINGS && (f.flags & Flag.ACK) !== 0)
    .then(() => true, () => false);
}

/** Starts one books call on a raw connection; resolves with the bytes of the answer's DATA. */
async function rawBooks(conn: RawConnection, streamId: number): Promise<number> {
  conn.write(grpcCall(streamId));
  await conn.waitFor((f) =>
    f.streamId === streamId && f.type === FrameType.HEADERS && (f.flags & Flag.END_STREAM) !== 0
  );
  return conn.frames.filter((f) => f.streamId === streamId && f.type === FrameType.DATA)
    .reduce((n, f) => n + f.payload.length, 0);
}

Deno.test("connections per client address are capped; other addresses are not affected", async () => {
  const server = await listen({ maxConnectionsPerClient: 3 });
  const conns: RawConnection[] = [];
  const other = clientFrom(server.url, OTHER);
  try {
    const admissions: boolean[] = [];
    for (let i = 0; i < 5; i++) {
      const conn = await connectRaw(server.url, { localAddress: FLOODER });
      conn.write(clientStart());
      conns.push(conn);
      admissions.push(await admitted(conn));
    }
    assert.deepEqual(admissions, [true, true, true, false, false]);
    // The three within the cap carry calls; another address is served.
    for (const conn of conns.slice(0, 3)) assert.ok(await rawBooks(conn, 1) > 5);
    assert.deepEqual(await other.books(), ["Kindred"]);
    // A slot freed is a slot to take again.
    conns[0]!.socket.end();
    await conns[0]!.closed;
    await waitFor("the slot freed", async () => {
      const again = await connectRaw(server.url, { localAddress: FLOODER });
      again.write(clientStart());
      conns.push(again);
      return await admitted(again) ? true : undefined;
    });
    assert.ok(await rawBooks(conns.at(-1)!, 1) > 5);
  } finally {
    for (const c of conns) c.socket.destroy();
    await server.shutdown();
  }
  const refused = server.noise().filter((l) => l.msg === "grpc connections refused");
  const total = refused.reduce(
    (n, l) => n + Number((l.refused as Record<string, number>)["client-limit"] ?? 0),
    0,
  );
  assert.ok(total >= 2);
});

Deno.test("a connection that does not complete the HTTP/2 handshake in time is closed", async () => {
  const server = await listen({ handshakeTimeoutMs: 500, idleTimeoutMs: 60_000 });
  const conns: RawConnection[] = [];
  try {
    const silent = await connectRaw(server.url);
    const magicOnly = await connectRaw(server.url);
    magicOnly.write(PREFACE);
    // The preface's magic and part of a SETTINGS frame, the rest never sent.
    const partial = await connectRaw(server.url);
    partial.write(Buffer.concat([PREFACE, frame(FrameType.SETTINGS, 0, 0).subarray(0, 4)]));
    // Preface and SETTINGS, but the server's SETTINGS never acknowledged.
    const noAck = await connectRaw(server.url, { ackSettings: false });
    noAck.write(clientStart());
    const complete = await connectRaw(server.url);
    complete.write(clientStart());
    conns.push(silent, magicOnly, partial, noAck, complete);
    await Promise.all([silent.closed, magicOnly.closed, partial.closed, noAck.closed]);
    // The one that completed it stays, well past the deadline, and carries calls.
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(complete.isClosed(), false);
    assert.ok(await rawBooks(complete, 1) > 5);
  } finally {
    for (const c of conns) c.socket.destroy();
    await server.shutdown();
  }
  const refused = server.noise().filter((l) => l.msg === "grpc connections refused");
  const total = refused.reduce(
    (n, l) => n + Number((l.refused as Record<string, number>)["handshake-timeout"] ?? 0),
    0,
  );
  assert.equal(total, 4);
});

Deno.test("a connection with no call in flight is closed after the idle timeout, even when it sends PINGs", async () => {
  const server = await listen({ idleTimeoutMs: 800 });
  const conns: RawConnection[] = [];
  const timers: ReturnType<typeof setInterval>[] = [];
  try {
    const pinging = await connectRaw(server.url);
    pinging.write(clientStart());
    assert.ok(await rawBooks(pinging, 1) > 5);
    let pings = 0;
    timers.push(setInterval(() => {
      pinging.write(frame(FrameType.PING, 0, 0, Buffer.alloc(8, ++pings)));
    }, 100));
    // A connection with a call in flight the whole time is not idle, however long the call.
    const busy = await connectRaw(server.url);
    busy.write(clientStart());
    busy.write(
      frame(
        FrameType.HEADERS,
        Flag.END_HEADERS,
        1,
        grpcCallHeaders("/books.v1.BooksService/books"),
      ),
    );
    conns.push(pinging, busy);

    const goaway = await pinging.waitFor((f) => f.type === FrameType.GOAWAY);
    assert.equal(goaway.payload.readUInt32BE(4), 0, "GOAWAY NO_ERROR");
    await pinging.closed;
    assert.ok(
      pinging.frames.filter((f) => f.type === FrameType.PING).length >= 5,
      "PINGs were answered",
    );
    assert.equal(busy.isClosed(), false);
    assert.ok(!busy.frames.some((f) => f.type === FrameType.GOAWAY));
    // It finishes its call; then it is idle, and closed in turn.
    busy.write(frame(FrameType.DATA, Flag.END_STREAM, 1, Buffer.alloc(5)));
    await busy.waitFor((f) => f.type === FrameType.GOAWAY);
    await busy.closed;
  } finally {
    for (const t of timers) clearInterval(t);
    for (const c of conns) c.socket.destroy();
    await server.shutdown();
  }
});

/**
 * Writes `unit` over and over (in batches of `batchUnits`, yielding between them) until the
 * server closes the connection; fails when it is still open after `maxUnits`.
 */
async function floodUntilClosed(
  conn: RawConnection,
  unit: () => Buffer,
  maxUnits: number,
  batchUnits = 200,
) {
  let sent = 0;
  while (!conn.isClosed() && sent < maxUnits) {
    const batch: Buffer[] = [];
    for (let i = 0; i < batchUnits; i++, sent++) batch.push(unit());
    conn.write(Buffer.concat(batch));
    await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.race([conn.closed, new Promise((r) => setTimeout(r, 5000))]);
  assert.ok(
    conn.isClosed(),
    `the server still holds the connection after ${sent} × ${
      unit().subarray(0, 9).toString("hex")
    }`,
  );
  return sent;
}

Deno.test("HTTP/2 abuse ends the abusive connection and leaves the listener serving others", async (t) => {
  const server = await listen();
  const other = clientFrom(server.url, OTHER);
  const books = grpcCallHeaders("/books.v1.BooksService/books");
  try {
    assert.deepEqual(await other.books(), ["Kindred"]);

    await t.step("rapid reset: streams opened and cancelled at once, without end", async () => {
      const conn = await connectRaw(server.url, { localAddress: FLOODER });
      conn.write(clientStart());
      let id = -1;
      const flood = floodUntilClosed(conn, () => {
        id += 2;
        return Buffer.concat([
          frame(FrameType.HEADERS, Flag.END_HEADERS, id, books),
          frame(FrameType.RST_STREAM, 0, id, Buffer.from([0, 0, 0, 8])), // CANCEL
        ]);
      }, 100_000);
      assert.deepEqual(await other.books(), ["Kindred"]);
      await flood;
      assert.deepEqual(await other.books(), ["Kindred"]);
    });

    await t.step("CONTINUATION flood: a header block that never ends", async () => {
      for (const payload of [Buffer.alloc(0), headerBlock([["x-pad", "a".repeat(100)]])]) {
        const conn = await connectRaw(server.url, { localAddress: FLOODER });
        conn.write(Buffer.concat([clientStart(), frame(FrameType.HEADERS, 0, 1, books)]));
        const flood = floodUntilClosed(
          conn,
          () => frame(FrameType.CONTINUATION, 0, 1, payload),
          100_000,
        );
        assert.deepEqual(await other.books(), ["Kindred"]);
        await flood;
      }
      assert.deepEqual(await other.books(), ["Kindred"]);
    });

    await t.step(
      "SETTINGS and PING floods from a client that never reads the acknowledgements",
      async () => {
        for (
          const unit of [
            () => frame(FrameType.SETTINGS, 0, 0, Buffer.from([0, 3, 0, 0, 0, 100])),
            () => frame(FrameType.PING, 0, 0, Buffer.alloc(8)),
          ]
        ) {
          // A client that completes the handshake, then stops reading. nghttp2 counts the
          // acknowledgements it holds back; a batch of a few thousand frames read at once
          // reaches its limit. (Smaller batches are paced by the kernel's socket buffers,
          // which the server's acknowledgements fill before any memory of its own.)
          const conn = await connectRaw(server.url, { localAddress: FLOODER });
          conn.write(clientStart());
          assert.ok(await admitted(conn));
          conn.socket.pause();
          const flood = floodUntilClosed(conn, unit, 200_000, 2000);
          assert.deepEqual(await other.books(), ["Kindred"]);
          await flood;
        }
        assert.deepEqual(await other.books(), ["Kindred"]);
      },
    );

    await t.step("a few hundred idle connections from one address", async () => {
      const idle = await openMany(server.url, 300, FLOODER, clientStart());
      try {
        const taken = await Promise.all(idle.map((c) => admitted(c)));
        assert.equal(taken.filter(Boolean).length, 100, "the per-client cap");
        assert.deepEqual(await other.books(), ["Kindred"]);
      } finally {
        for (const c of idle) c.socket.destroy();
      }
    });
  } finally {
    await server.shutdown();
  }
  // The abuse is visible in the log as a few lines, not one per frame or connection.
  const noise = server.noise();
  assert.ok(noise.length <= 5, JSON.stringify(noise));
});

Deno.test("connections count against their client's address; an IPv6 client by its /64", () => {
  assert.equal(clientOf("127.0.0.1"), "127.0.0.1");
  assert.equal(clientOf("::ffff:192.0.2.7"), "192.0.2.7");
  assert.equal(clientOf("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  assert.equal(clientOf("2001:db8:1:2:bbbb:cccc:dddd:eeee"), "2001:db8:1:2::/64");
  assert.equal(clientOf("2001:0db8:0000:0002::5"), "2001:db8:0:2::/64");
  assert.equal(clientOf("2001:db8::1"), "2001:db8:0:0::/64");
  assert.equal(clientOf("::1"), "0:0:0:0::/64");
  assert.equal(clientOf("fe80::1%eth0"), "fe80:0:0:0::/64");
  assert.equal(clientOf(undefined), "unknown");
});

Deno.test("GRPC_MAX_CONNECTIONS_PER_CLIENT and GRPC_*_TIMEOUT_S reach the supervised listener", async () => {
  const server = await startTestServer({
    GRPC_MAX_CONNECTIONS_PER_CLIENT: "2",
    GRPC_HANDSHAKE_TIMEOUT_S: "1",
    GRPC_IDLE_TIMEOUT_S: "1",
  });
  const conns: RawConnection[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const conn = await connectRaw(server.grpcUrl!);
      conns.push(conn);
      conn.write(clientStart());
    }
    assert.deepEqual(await Promise.all(conns.map((c) => admitted(c))), [true, true, false]);
    // From other addresses (their own slots): a connection that never speaks HTTP/2 is closed
    // when its second is up...
    const silent = await connectRaw(server.grpcUrl!, { localAddress: "127.0.0.3" });
    conns.push(silent);
    await silent.closed;
    assert.equal(silent.frames.filter((f) => f.type === FrameType.SETTINGS).length, 1);
    // ...and one that does speak it, but makes no call, is sent GOAWAY when its second is up.
    const idle = await connectRaw(server.grpcUrl!, { localAddress: "127.0.0.4" });
    conns.push(idle);
    idle.write(clientStart());
    assert.ok(await admitted(idle));
    await idle.waitFor((f) => f.type === FrameType.GOAWAY);
  } finally {
    for (const c of conns) c.socket.destroy();
    await server.close();
  }
  const refused = server.logs.filter((l) => l.msg === "grpc connections refused");
  const counts = refused.map((l) => l.refused as Record<string, number>);
  assert.equal(counts.reduce((n, c) => n + (c["client-limit"] ?? 0), 0), 1);
  assert.equal(counts.reduce((n, c) => n + (c["handshake-timeout"] ?? 0), 0), 1);
});

Deno.test("bad connection settings stop start-up with one line naming the variable", () => {
  const cases: [Record<string, string>, string][] = [
    [
      { GRPC_MAX_CONNECTIONS_PER_CLIENT: "0" },
      'invalid GRPC_MAX_CONNECTIONS_PER_CLIENT="0": must be a positive integer',
    ],
    [
      { GRPC_MAX_CONNECTIONS_PER_CLIENT: "1001" },
      `invalid GRPC_MAX_CONNECTIONS_PER_CLIENT="1001": must be at most 1000 (the listener's connection limit)`,
    ],
    [
      { GRPC_HANDSHAKE_TIMEOUT_S: "2.5" },
      'invalid GRPC_HANDSHAKE_TIMEOUT_S="2.5": must be a positive integer',
    ],
    [
      { GRPC_HANDSHAKE_TIMEOUT_S: "301" },
      'invalid GRPC_HANDSHAKE_TIMEOUT_S="301": must be at most 300',
    ],
    [
      { GRPC_IDLE_TIMEOUT_S: "never" },
      'invalid GRPC_IDLE_TIMEOUT_S="never": must be a positive integer',
    ],
    [
      { GRPC_IDLE_TIMEOUT_S: "86401" },
      'invalid GRPC_IDLE_TIMEOUT_S="86401": must be at most 86400 (a day)',
    ],
  ];
  for (const [env, message] of cases) {
    assert.throws(
      () => loadConfig(env),
      (e: unknown) => e instanceof ConfigError && e.message === message,
    );
  }
  assert.deepEqual(loadConfig({}).grpcConnections, {
    maxConnectionsPerClient: 100,
    handshakeTimeoutMs: 5000,
    idleTimeoutMs: 300_000,
  });
});

/**
 * A gRPC client in a separate Node.js process (Deno 2.9.6's node:http2 client can crash when it
 * receives a GOAWAY, denoland/deno#36788): one call, a wait longer than the server's idle
 * timeout, the channel's state, another call.
 */
const GRPC_JS_IDLE_CLIENT = `
const grpc = require("@grpc/grpc-js");
const [address, waitMs] = process.argv.slice(1);
const client = new grpc.Client(address, grpc.credentials.createInsecure());
const call = () => new Promise((resolve, reject) =>
  client.makeUnaryRequest("/books.v1.BooksService/books", (b) => b, (b) => b, Buffer.alloc(0),
    (error, reply) => (error ? reject(error) : resolve(reply.length))));
(async () => {
  const result = { first: await call() };
  result.stateBefore = client.getChannel().getConnectivityState(false);
  await new Promise((r) => setTimeout(r, Number(waitMs)));
  result.stateAfter = client.getChannel().getConnectivityState(false);
  try {
    result.second = await call();
  } catch (error) {
    result.secondError = String(error.code) + " " + error.details;
  }
  console.log(JSON.stringify(result));
  client.close();
})();
`;

Deno.test("a gRPC client whose idle connection the server closed reconnects for its next call", async () => {
  const server = await startTestServer({ GRPC_IDLE_TIMEOUT_S: "1" });
  try {
    const child = await new Deno.Command("node", {
      args: ["-e", GRPC_JS_IDLE_CLIENT, new URL(server.grpcUrl!).host, "3000"],
      cwd: new URL("../..", import.meta.url).pathname, // resolves @grpc/grpc-js from node_modules
      stdout: "piped",
      stderr: "piped",
    }).output();
    const output = new TextDecoder().decode(child.stdout);
    assert.equal(child.code, 0, new TextDecoder().decode(child.stderr));
    const result = JSON.parse(output);
    assert.ok(result.first > 1000, "the catalogue");
    assert.equal(result.stateBefore, grpcConnectivity.READY);
    // The server sent GOAWAY and closed the connection: the channel went idle, not failed.
    assert.equal(result.stateAfter, grpcConnectivity.IDLE);
    assert.equal(result.secondError, undefined);
    assert.equal(result.second, result.first);
  } finally {
    await server.close();
  }
});

// @grpc/grpc-js's connectivity states.
const grpcConnectivity = { IDLE: 0, READY: 2 } as const;

Deno.test("shutdown closes, after its grace, connections whose clients never close them", async () => {
  const server = await listen();
  const conn = await connectRaw(server.url, { halfOpen: true });
  conn.write(clientStart());
  assert.ok(await admitted(conn));
  // The client ignores the GOAWAY and the server's FIN: only the server can end it.
  const stopped = server.shutdown().then(() => "stopped");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stuck = new Promise((
    r,
  ) => (timer = setTimeout(() => r("still stopping after 10 s"), 10_000)));
  try {
    assert.equal(await Promise.race([stopped, stuck]), "stopped");
    await conn.ended;
    assert.ok(conn.frames.some((f) => f.type === FrameType.GOAWAY));
  } finally {
    clearTimeout(timer);
    conn.socket.destroy();
  }
});
