import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  clientStart,
  connectRaw,
  FrameType,
  grpcCall,
  type RawConnection,
} from "../support/h2_raw.ts";
import { booksClient, grpcTransport } from "../support/rpc_clients.ts";
import { startTestListener, startTestServer } from "../support/server.ts";

type Ending = "fin" | "rst";
type Moment = "with-the-calls" | "after-first-answer" | "a-moment-later";

/**
 * One client that goes away with calls in flight: it starts `calls` unary calls, then closes
 * its connection with FIN (`end`) or RST (`resetAndDestroy`) at `moment`.
 */
async function vanishingClient(url: string, ending: Ending, moment: Moment, calls: number) {
  let conn: RawConnection;
  try {
    conn = await connectRaw(url);
  } catch {
    return; // the listener refused or was not there: the steady client's check tells
  }
  const requests = [clientStart()];
  for (let i = 0; i < calls; i++) requests.push(grpcCall(1 + 2 * i));
  conn.write(Buffer.concat(requests));
  if (moment === "after-first-answer") {
    await conn.waitFor((f) => f.type === FrameType.DATA).catch(() => {});
  } else if (moment === "a-moment-later") {
    await new Promise((r) => setTimeout(r, Math.random() * 3));
  }
  if (ending === "fin") conn.socket.end();
  else conn.socket.resetAndDestroy();
  await conn.closed;
}

Deno.test("gRPC clients that vanish mid-call (FIN and RST) never take the listener down", async () => {
  const server = await startTestServer({ LOG_LEVEL: "info" });
  const steady = booksClient(grpcTransport(server.grpcUrl!));
  const expected = (await steady.books({})).book.length;
  assert.ok(expected > 0);
  let stop = false;
  const failures: string[] = [];
  let steadyCalls = 0;
  const steadyLoop = (async () => {
    while (!stop) {
      try {
        const { book } = await steady.books({}, { timeoutMs: 10_000 });
        if (book.length !== expected) failures.push(`${book.length} books`);
      } catch (error) {
        failures.push(String(error));
      }
      steadyCalls++;
    }
  })();
  try {
    const endings: Ending[] = ["fin", "rst"];
    const moments: Moment[] = ["with-the-calls", "after-first-answer", "a-moment-later"];
    const rounds = 8;
    const perRound = 48;
    for (let round = 0; round < rounds; round++) {
      await Promise.all(
        Array.from({ length: perRound }, (_, i) =>
          vanishingClient(
            server.grpcUrl!,
            endings[i % 2]!,
            moments[Math.floor(i / 2) % 3]!,
            1 + (i % 16),
          )),
      );
    }
    // The steady client keeps going a little after the last vanishing client, on the same
    // connection, so a late death would show.
    const after = steadyCalls;
    while (steadyCalls < after + 20) await new Promise((r) => setTimeout(r, 5));
  } finally {
    stop = true;
    await steadyLoop;
    await server.close();
  }
  const died = server.logs.filter((l) => l.msg === "grpc listener died; restarting");
  assert.deepEqual(died, [], "the gRPC child never died");
  assert.equal(
    server.logs.filter((l) => l.msg === "grpc listening").length,
    1,
    "one child, never restarted",
  );
  assert.deepEqual(failures, [], "every steady call succeeded");
  assert.ok(steadyCalls > 20);
});

Deno.test("frames for a client that closed its connection are dropped, not written", async () => {
  const listener = await startTestListener();
  try {
    for (let round = 0; round < 4; round++) {
      await Promise.all(
        Array.from(
          { length: 32 },
          (_, i) =>
            vanishingClient(listener.url, "fin", i % 2 ? "with-the-calls" : "a-moment-later", 16),
        ),
      );
    }
  } finally {
    await listener.shutdown();
  }
  listener.flush();
  const logs = listener.logs;
  // Writing them would fail the socket with EPIPE ("This socket has been ended by the other
  // party"), which node:http2 hands to the connection and each of its streams as an error.
  const writeErrors = logs.filter((l) => /ended by the other party|EPIPE/.test(String(l.error)));
  assert.deepEqual(writeErrors, []);
  assert.ok(logs.some((l) => l.msg === "rpc"), "calls were answered before the clients left");
});
