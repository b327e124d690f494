/**
 * The change feed over sockets, through every style's door, with writes made through every
 * style: commit order, owners apart, resumption without loss or duplicate, other processes,
 * kill -9, the limits, token expiry, retention and shutdown.
 */
import assert from "node:assert/strict";
import { EXAMPLE_INPUT } from "../../lib/address.ts";
import {
  type AddressDoor,
  graphqlDoor,
  restDoor,
  rpcDoor,
  rpcTransport,
} from "../support/address_doors.ts";
import {
  graphqlWatchDoor,
  type ReceivedEvent,
  rpcWatchDoor,
  sseDoor,
  sseSocketDoor,
  type Watch,
  type WatchDoor,
} from "../support/event_doors.ts";
import { connectTransport, grpcTransport, grpcWebTransport } from "../support/rpc_clients.ts";
import { spawnServer, startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const AUTH = { AUTH_JWT_SECRET: SECRET };

type Server = { httpUrl: string; grpcUrl?: string | undefined };

/** The doors a subscriber may use, by style. */
const WATCHERS: Record<string, (server: Server, token: string) => WatchDoor> = {
  "REST": (s, t) => sseDoor(s.httpUrl, t),
  "REST ?after": (s, t) => sseDoor(s.httpUrl, t, "after"),
  "gRPC": (s, t) => rpcWatchDoor("gRPC", grpcTransport(s.grpcUrl!), t),
  "Connect (HTTP port)": (s, t) => rpcWatchDoor("Connect", connectTransport(s.httpUrl, "1.1"), t),
  "gRPC-Web (HTTP port)": (s, t) => rpcWatchDoor("gRPC-Web", grpcWebTransport(s.httpUrl, "1.1"), t),
  "GraphQL": (s, t) => graphqlWatchDoor(s.httpUrl, t),
};

/** Writers through every style. */
function writers(server: Server, token: string): AddressDoor[] {
  return [
    restDoor(server.httpUrl, token),
    graphqlDoor(server.httpUrl, token),
    rpcDoor(rpcTransport(server as { httpUrl: string; grpcUrl: string }, "gRPC"), "gRPC", token),
    rpcDoor(rpcTransport(server, "Connect (HTTP port)"), "Connect (HTTP port)", token),
  ];
}

async function token(sub: string, exp?: number) {
  return await hsToken({ sub, scope: "addresses:read addresses:write" }, exp ? { exp } : {});
}

function ok<T>(outcome: { ok: true; value: T } | { ok: false; code: string }): T {
  if (!outcome.ok) throw new Error(`refused: ${outcome.code}`);
  return outcome.value;
}

/** What a client expects to see: the changes its writes made, in order. */
interface Expected {
  type: ReceivedEvent["type"];
  id: number;
  etag?: string;
}

/** Creates, replaces, updates and deletes through each door in turn; returns the changes. */
async function writeThroughEvery(doors: AddressDoor[], tag: string): Promise<Expected[]> {
  const expected: Expected[] = [];
  for (const door of doors) {
    const created = ok(await door.create({ ...EXAMPLE_INPUT, name: `${tag} ${door.style}` }));
    expected.push({ type: "created", id: created.address.id, etag: created.etag });
    const replaced = ok(
      await door.replace(created.address.id, { ...EXAMPLE_INPUT, city: "Leeds" }),
    );
    expected.push({ type: "replaced", id: created.address.id, etag: replaced.etag });
    const updated = ok(await door.update(created.address.id, { city: "York" }));
    expected.push({ type: "updated", id: created.address.id, etag: updated.etag });
  }
  const last = expected.at(-1)!;
  ok(await doors[0]!.remove(last.id));
  expected.push({ type: "deleted", id: last.id });
  return expected;
}

async function receive(watch: Watch, n: number, ms = 5000): Promise<ReceivedEvent[]> {
  const got: ReceivedEvent[] = [];
  while (got.length < n) {
    const event = await watch.next(ms);
    if (event === undefined) break;
    got.push(event);
  }
  return got;
}

function assertSame(got: ReceivedEvent[], expected: Expected[], what: string) {
  assert.deepEqual(
    got.map((e) => ({ type: e.type, id: e.id, ...(e.etag ? { etag: e.etag } : {}) })),
    expected.map((e) => ({ type: e.type, id: e.id, ...(e.etag ? { etag: e.etag } : {}) })),
    what,
  );
  for (const e of got) {
    assert.equal(e.address === undefined, e.type === "deleted", `${what}: address of ${e.type}`);
    if (e.address) assert.equal(e.address.id, e.id, what);
  }
}

for (const [style, watcher] of Object.entries(WATCHERS)) {
  Deno.test(`feed (${style}): every style's writes in commit order, no other owner's, resumed without loss`, async () => {
    const server = await startTestServer(AUTH);
    try {
      const alice = await token("alice");
      const bob = await token("bob");
      const watch = ok(await watcher(server, alice).open());
      assert.ok(watch.opened === undefined || watch.opened.length > 0);
      // Bob writes too: none of it reaches Alice.
      const [bobsWrites, expected] = await Promise.all([
        writeThroughEvery(writers(server, bob).slice(0, 1), "bob"),
        writeThroughEvery(writers(server, alice), "alice"),
      ]);
      assert.ok(bobsWrites.length > 0);
      const got = await receive(watch, expected.length);
      assertSame(got, expected, "in commit order");
      assert.equal(await watch.next(300), undefined, "nothing else (no other owner's)");
      // The stored state is what the events say.
      const rest = restDoor(server.httpUrl, alice);
      for (const e of got.filter((e) => e.type !== "deleted").slice(-2)) {
        const stored = await rest.get(e.id);
        if (stored.ok && stored.value.etag === e.etag) {
          assert.deepEqual(stored.value.address, e.address);
        }
      }
      await watch.close();

      // Disconnected after the third change; writes in between; resumed: exactly the rest.
      const resumeAt = got[2]!;
      const more = await writeThroughEvery(writers(server, alice).slice(1, 2), "later");
      const resumed = ok(await watcher(server, alice).open(resumeAt.token));
      const missed = await receive(resumed, expected.length - 3 + more.length);
      assertSame(missed, [...expected.slice(3), ...more], "resumed");
      assert.equal(await resumed.next(300), undefined, "no duplicate");
      await resumed.close();

      // Another owner's token, an edited one and garbage are invalid-parameter.
      const bobs = ok(await watcher(server, bob).open());
      const bobsLast = (await receive(bobs, 1, 300))[0];
      await bobs.close();
      assert.equal(bobsLast, undefined);
      const edited = resumeAt.token.slice(0, -1) + (resumeAt.token.endsWith("A") ? "B" : "A");
      for (const bad of [edited, "not-a-token", resumeAt.token + "x"]) {
        const refused = await watcher(server, alice).open(bad);
        assert.deepEqual(refused.ok ? "opened" : refused.code, "invalid-parameter", bad);
      }
      const stolen = await watcher(server, bob).open(resumeAt.token);
      assert.deepEqual(stolen.ok ? "opened" : stolen.code, "invalid-parameter", "another owner's");
    } finally {
      await server.close();
    }
  });
}

Deno.test("feed: a stream opened and left before any change resumes from its opening position, in every style", async () => {
  const server = await startTestServer(AUTH);
  try {
    const alice = await token("alice");
    for (const [style, watcher] of Object.entries(WATCHERS)) {
      const door = watcher(server, alice);
      const first = ok(await door.open());
      assert.ok(first.opened, style);
      await first.close();
      const created = ok(await restDoor(server.httpUrl, alice).create(EXAMPLE_INPUT));
      const again = ok(await door.open(first.opened));
      assertSame(await receive(again, 1), [
        { type: "created", id: created.address.id, etag: created.etag },
      ], `${style}: missed`);
      await again.close();
    }
  } finally {
    await server.close();
  }
});

for (const [style, watcher] of Object.entries(WATCHERS)) {
  Deno.test(`feed (${style}): a write by a second process on the same KV file is delivered; kill -9 loses nothing`, async () => {
    // Every process with its own gRPC listener in it, so each style's door is on each.
    const env = { ...AUTH, GRPC_ISOLATION: "inline" };
    const first = await startTestServer(env);
    const second = await spawnServer({ ...env, KV_PATH: first.kvPath });
    let third: Awaited<ReturnType<typeof spawnServer>> | undefined;
    try {
      const alice = await token("alice");
      const watch = ok(await watcher(first, alice).open());
      // Written by the other process, through another style.
      const created = ok(await graphqlDoor(second.httpUrl, alice).create(EXAMPLE_INPUT));
      const [event] = await receive(watch, 1, 5000);
      assert.equal(event?.id, created.address.id, "the other process's write");
      await watch.close();

      // A stream on the second process; it is killed; writes go on elsewhere; resumed on a third.
      const onSecond = ok(await watcher(second, alice).open(event!.token));
      const writer = restDoor(first.httpUrl, alice);
      const before = ok(await writer.create(EXAMPLE_INPUT));
      const [seen] = await receive(onSecond, 1);
      assert.equal(seen?.id, before.address.id);
      await second.kill();
      const after = [
        ok(await writer.create(EXAMPLE_INPUT)),
        ok(await writer.update(before.address.id, { city: "Bath" })),
      ];
      third = await spawnServer({ ...env, KV_PATH: first.kvPath });
      const resumed = ok(await watcher(third, alice).open(seen!.token));
      assertSame(await receive(resumed, 2), [
        { type: "created", id: after[0]!.address.id, etag: after[0]!.etag },
        { type: "updated", id: before.address.id, etag: after[1]!.etag },
      ], "after kill -9");
      assert.equal(await resumed.next(300), undefined);
      await resumed.close();
    } finally {
      await second.kill().catch(() => {});
      await third?.stop();
      await first.close();
    }
  });
}

// REST's streams over bare sockets here: closing one is a client gone (event_doors.ts says why).
const LIMITED: Record<string, (server: Server, token: string) => WatchDoor> = {
  REST: (s, t) => sseSocketDoor(s.httpUrl, t),
  gRPC: WATCHERS.gRPC!,
  GraphQL: WATCHERS.GraphQL!,
};

for (const style of Object.keys(LIMITED)) {
  Deno.test(`feed (${style}): stream limits per caller and per server are rate-limited`, async () => {
    const server = await startTestServer({
      ...AUTH,
      GRPC_ISOLATION: "inline",
      EVENTS_MAX_STREAMS_PER_CALLER: "2",
      EVENTS_MAX_STREAMS: "3",
    });
    try {
      const [alice, bob, carol] = await Promise.all(
        ["alice", "bob", "carol"].map((s) => token(s)),
      ) as [
        string,
        string,
        string,
      ];
      const open: Watch[] = [];
      for (const t of [alice, alice]) open.push(ok(await LIMITED[style]!(server, t).open()));
      const third = await LIMITED[style]!(server, alice).open();
      assert.equal(third.ok ? "opened" : third.code, "rate-limited", "per caller");
      open.push(ok(await LIMITED[style]!(server, bob).open()));
      const overall = await LIMITED[style]!(server, carol).open();
      assert.equal(overall.ok ? "opened" : overall.code, "rate-limited", "per server");
      // A closed stream gives its place back once the server has seen the client go (a moment
      // on a loaded machine: asked again until then, for up to 10 s).
      await open.shift()!.close();
      let again = await LIMITED[style]!(server, carol).open();
      for (let tries = 0; !again.ok && again.code === "rate-limited" && tries < 100; tries++) {
        await new Promise((r) => setTimeout(r, 100));
        again = await LIMITED[style]!(server, carol).open();
      }
      open.push(ok(again));
      for (const w of open) await w.close();
    } finally {
      await server.close();
    }
  });
}

Deno.test("feed (REST): a stream ends when its token expires, and at shutdown, after what it sent", async () => {
  const server = await startTestServer({ ...AUTH, GRPC_PORT: "off" });
  try {
    const soon = await token("alice", Math.floor(Date.now() / 1000) + 2);
    const watch = ok(await sseDoor(server.httpUrl, soon).open());
    const created = ok(await restDoor(server.httpUrl, soon).create(EXAMPLE_INPUT));
    assert.equal((await watch.next())?.id, created.address.id);
    assert.equal(await watch.next(6000), undefined);
    assert.ok(watch.ended, "ended at the token's exp");

    const alice = await token("alice");
    const open = ok(await sseDoor(server.httpUrl, alice).open());
    const shutdown = server.shutdown({ drainMs: 100 });
    assert.equal(await open.next(5000), undefined);
    assert.ok(open.ended, "ended at shutdown");
    await shutdown;
  } finally {
    await server.close().catch(() => {});
  }
});

Deno.test("feed: a token whose next change is past the retention is events-expired in every style", async () => {
  const server = await startTestServer({ ...AUTH, EVENTS_RETENTION: "1s" });
  try {
    const alice = await token("alice");
    const watch = ok(await sseDoor(server.httpUrl, alice).open());
    const writer = restDoor(server.httpUrl, alice);
    const created = ok(await writer.create(EXAMPLE_INPUT));
    const [first] = await receive(watch, 1);
    assert.equal(first?.id, created.address.id);
    await watch.close();
    ok(await writer.update(created.address.id, { city: "Ely" }));
    await new Promise((r) => setTimeout(r, 1500));
    for (const [style, watcher] of Object.entries(WATCHERS)) {
      const refused = await watcher(server, alice).open(first!.token);
      assert.equal(refused.ok ? "opened" : refused.code, "events-expired", style);
    }
    const answer = await fetch(`${server.httpUrl}/addresses/events`, {
      headers: { authorization: `Bearer ${alice}`, "last-event-id": first!.token },
    });
    assert.equal(answer.status, 410);
    await answer.body?.cancel();
  } finally {
    await server.close();
  }
});

Deno.test("feed: several streams of one owner, in every style at once, each get every change", async () => {
  const server = await startTestServer(AUTH);
  try {
    const alice = await token("alice");
    const watches = await Promise.all(
      Object.values(WATCHERS).flatMap((w) => [w, w]).map(async (w) =>
        ok(await w(server, alice).open())
      ),
    );
    const expected = await writeThroughEvery(writers(server, alice).slice(0, 2), "many");
    for (const [i, watch] of watches.entries()) {
      assertSame(await receive(watch, expected.length), expected, `stream ${i}`);
      await watch.close();
    }
  } finally {
    await server.close();
  }
});
