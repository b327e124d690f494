/**
 * REST's event stream body on its own (routes/address_events.ts) over a real feed: a client that
 * stops reading has its stream ended after a bounded queue, and resumes from the last event it
 * got without loss; the keep-alive comment. Over a socket the kernel's buffers sit in between,
 * so the bound is shown here, where the queue is the only buffer.
 */
import assert from "node:assert/strict";
import { EXAMPLE_INPUT } from "../../lib/address.ts";
import { eventStream } from "../../routes/address_events.ts";
import { subscriptionStream } from "../../graphql/event_stream.ts";
import { openStore } from "../../store/store.ts";
import { sseFrames } from "../support/event_doors.ts";

async function frames(body: ReadableStream<Uint8Array>) {
  const out = [];
  for await (const frame of sseFrames(body)) out.push(frame);
  return out;
}

Deno.test("event stream: a reader that stops reading is ended after its queue, and resumes without loss", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = await openStore(kv, { seedBooks: [], label: "test" });
  const opened = await store.feed.open("alice", { caller: "alice" });
  const body = eventStream(opened, { heartbeatMs: 60_000, maxQueuedBytes: 2_000 });
  const ids: number[] = [];
  for (let i = 0; i < 40; i++) {
    ids.push((await store.addresses.create("alice", EXAMPLE_INPUT)).address.id);
  }
  // Nothing was read meanwhile: the stream ended once about 2 KB were queued.
  await new Promise((r) => setTimeout(r, 300));
  const got = (await frames(body)).filter((f) => f.data !== undefined);
  assert.ok(got.length > 0 && got.length < 40, `${got.length} events queued`);
  assert.deepEqual(got.map((f) => JSON.parse(f.data!).id), ids.slice(0, got.length));
  assert.equal(store.feed.size, 0, "the stream is closed");
  // Resumed from the last event received: exactly the rest.
  const resumed = await store.feed.open("alice", { caller: "alice", after: got.at(-1)!.id });
  const rest: number[] = [];
  for await (const change of resumed) {
    rest.push(change.id);
    if (rest.length === 40 - got.length) break;
  }
  assert.deepEqual(rest, ids.slice(got.length));
  store.feed.closeAll();
});

Deno.test("event stream: an idle stream gets a comment line every heartbeat", async () => {
  using kv = await Deno.openKv(":memory:");
  const store = await openStore(kv, { seedBooks: [], label: "test" });
  const opened = await store.feed.open("alice", { caller: "alice" });
  const body = eventStream(opened, { heartbeatMs: 100, maxQueuedBytes: 10_000 });
  const reader = sseFrames(body);
  const first = await reader.next();
  assert.equal(first.value?.id, opened.position);
  const second = await reader.next();
  assert.equal(second.value?.comment, "keep-alive");
  assert.equal(second.value?.data, undefined);
  await reader.return(undefined);
  store.feed.closeAll();
});

Deno.test("GraphQL's subscription stream: a reader that stops reading gets what was queued, then complete", async () => {
  let made = 0;
  let ended = false;
  async function* results() {
    try {
      for (;;) {
        made++;
        yield { data: { addressEvents: { type: "CREATED", id: String(made), cursor: "x" } } };
        await Promise.resolve();
      }
    } finally {
      ended = true;
    }
  }
  const response = subscriptionStream(results(), (r) => r, (e) => ({ errors: [String(e)] }), "r", {
    heartbeatMs: 60_000,
    maxQueuedBytes: 2_000,
  });
  await new Promise((r) => setTimeout(r, 200));
  assert.ok(ended, "the results were closed, not read on");
  const frames = [];
  for await (const frame of sseFrames(response.body!)) frames.push(frame);
  const next = frames.filter((f) => f.event === "next");
  assert.ok(next.length > 0 && next.length < made + 1, `${next.length} queued of ${made}`);
  assert.deepEqual(
    next.map((f) => JSON.parse(f.data!).data.addressEvents.id),
    next.map((_, i) => String(i + 1)),
  );
  assert.equal(frames.at(-1)?.event, "complete");
});
