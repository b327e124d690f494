import assert from "node:assert/strict";
import { createGoawayFilter } from "../../rpc/http2/goaway_filter.ts";

const PREFACE = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

function frame(type: number, streamId: number, payload: number[]): Uint8Array {
  const n = payload.length;
  return new Uint8Array([
    (n >> 16) & 0xff,
    (n >> 8) & 0xff,
    n & 0xff,
    type,
    0,
    (streamId >>> 24) & 0x7f,
    (streamId >> 16) & 0xff,
    (streamId >> 8) & 0xff,
    streamId & 0xff,
    ...payload,
  ]);
}

function join(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const SETTINGS = frame(0x4, 0, [0, 3, 0, 0, 0, 100]);
const HEADERS = frame(0x1, 1, [0x83, 0x86, 0x84]);
const DATA = frame(0x0, 1, [0, 0, 0, 0, 0]);
const GOAWAY = frame(0x7, 0, [0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3]);
const PING = frame(0x6, 0, [1, 2, 3, 4, 5, 6, 7, 8]);
const EMPTY_GOAWAY_TYPE_DATA = frame(0x0, 3, []); // a zero-length frame

const STREAM = join([PREFACE, SETTINGS, HEADERS, DATA, GOAWAY, PING, EMPTY_GOAWAY_TYPE_DATA]);
const WITHOUT_GOAWAY = join([PREFACE, SETTINGS, HEADERS, DATA, PING, EMPTY_GOAWAY_TYPE_DATA]);

Deno.test("the GOAWAY filter removes exactly the client's GOAWAY frames", async (t) => {
  await t.step("in one chunk; a chunk with nothing to remove is passed as is", () => {
    const filter = createGoawayFilter();
    assert.deepEqual(new Uint8Array(filter(STREAM)), WITHOUT_GOAWAY);
    const clean = join([PREFACE, SETTINGS]);
    const again = createGoawayFilter();
    assert.equal(again(clean), clean);
  });

  await t.step("split at every byte boundary into two chunks", () => {
    for (let cut = 0; cut <= STREAM.length; cut++) {
      const filter = createGoawayFilter();
      const out = join([filter(STREAM.subarray(0, cut)), filter(STREAM.subarray(cut))]);
      assert.deepEqual(out, WITHOUT_GOAWAY, `cut at ${cut}`);
    }
  });

  await t.step("fed one byte at a time", () => {
    const filter = createGoawayFilter();
    const out = join([...STREAM].map((b) => filter(new Uint8Array([b]))));
    assert.deepEqual(out, WITHOUT_GOAWAY);
  });

  await t.step("split into three chunks at random places, 2,000 times", () => {
    for (let i = 0; i < 2000; i++) {
      const a = Math.floor(Math.random() * STREAM.length);
      const b = a + Math.floor(Math.random() * (STREAM.length - a));
      const filter = createGoawayFilter();
      const out = join([
        filter(STREAM.subarray(0, a)),
        filter(STREAM.subarray(a, b)),
        filter(STREAM.subarray(b)),
      ]);
      assert.deepEqual(out, WITHOUT_GOAWAY, `cuts at ${a} and ${b}`);
    }
  });
});
