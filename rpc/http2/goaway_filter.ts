import { Buffer } from "node:buffer";

const PREFACE_BYTES = 24;
const FRAME_HEADER_BYTES = 9;
const GOAWAY = 0x7;

/** Sees whole frames of the types it names as the filter passes them on (read, never changed). */
export interface FrameObserver {
  readonly types: ReadonlySet<number>;
  frame(type: number, flags: number, streamId: number, payload: Uint8Array): void;
}

/**
 * Returns a function that takes the bytes a client sends on one HTTP/2 connection, chunk by
 * chunk, and gives them back without the client's GOAWAY frames.
 *
 * Why: Deno 2.9.6's node:http2 server aborts inside nghttp2 when it processes a client's GOAWAY
 * while streams are in flight on other connections' turns of the event loop
 * (`find_stream_on_goaway_func: Assertion 'stream->closed_next == NULL'`, or `free(): invalid
 * pointer`; denoland/deno#36788), which every client sends when it closes a connection. A server
 * loses nothing by not reading it: it opens no streams of its own, and the client closes the
 * connection right after. Everything else passes byte for byte, in the same chunks when there is
 * nothing to remove. The first 24 bytes (the connection preface) are passed as they are.
 *
 * `observer`, when given, is handed every whole frame of the types it names, in order, before
 * the bytes that end it are passed on (so before node:http2 has seen the frame).
 */
export function createGoawayFilter(
  observer?: FrameObserver,
): (chunk: Uint8Array) => Uint8Array {
  let preface = PREFACE_BYTES;
  const header = new Uint8Array(FRAME_HEADER_BYTES);
  let headerFill = 0;
  // Payload bytes of the current frame still to come, and whether they are dropped.
  let payload = 0;
  let dropping = false;
  // The observed frame being read: its header fields and the payload bytes read so far.
  let observed: { type: number; flags: number; streamId: number; parts: Uint8Array[] } | undefined;

  /** Starts a frame whose 9-byte header is `h` at `at`: its payload length, and what is done with it. */
  function begin(h: Uint8Array, at: number) {
    payload = (h[at]! << 16) | (h[at + 1]! << 8) | h[at + 2]!;
    const type = h[at + 3]!;
    dropping = type === GOAWAY;
    if (observer === undefined || !observer.types.has(type)) return;
    const streamId = ((h[at + 5]! & 0x7f) << 24) | (h[at + 6]! << 16) | (h[at + 7]! << 8) |
      h[at + 8]!;
    observed = { type, flags: h[at + 4]!, streamId, parts: [] };
    if (payload === 0) end();
  }

  function end() {
    const frame = observed!;
    observed = undefined;
    const bytes = frame.parts.length === 1 ? frame.parts[0]! : Buffer.concat(frame.parts);
    observer!.frame(frame.type, frame.flags, frame.streamId, bytes);
  }

  return (chunk) => {
    let kept: Uint8Array[] | undefined; // set once something was dropped
    let keepFrom = 0;
    let at = 0;
    const drop = (from: number, to: number) => {
      kept ??= [];
      if (from > keepFrom) kept.push(chunk.subarray(keepFrom, from));
      keepFrom = to;
    };
    while (at < chunk.length) {
      if (preface > 0) {
        const n = Math.min(preface, chunk.length - at);
        preface -= n;
        at += n;
      } else if (payload > 0) {
        const n = Math.min(payload, chunk.length - at);
        if (dropping) drop(at, at + n);
        // A copy: the chunk is handed on, and its bytes are not ours to keep.
        if (observed !== undefined) observed.parts.push(chunk.slice(at, at + n));
        payload -= n;
        at += n;
        if (payload === 0 && observed !== undefined) end();
      } else if (headerFill === 0 && chunk.length - at >= FRAME_HEADER_BYTES) {
        // A whole frame header in this chunk (the usual case): read in place.
        begin(chunk, at);
        if (dropping) drop(at, at + FRAME_HEADER_BYTES);
        at += FRAME_HEADER_BYTES;
      } else {
        // A frame header split over chunks: its bytes are held back until the type is known,
        // then passed on (or dropped) as a whole.
        const start = at;
        const n = Math.min(FRAME_HEADER_BYTES - headerFill, chunk.length - at);
        header.set(chunk.subarray(at, at + n), headerFill);
        headerFill += n;
        at += n;
        if (headerFill < FRAME_HEADER_BYTES) {
          drop(start, at); // held in `header` until the rest arrives
          break;
        }
        const carried = headerFill - n; // header bytes that came in an earlier chunk
        headerFill = 0;
        begin(header, 0);
        if (dropping) drop(start, at);
        else if (carried > 0) {
          // Put back the part of the header held from the previous chunk.
          drop(start, start);
          kept!.push(header.slice(0, carried));
        }
      }
    }
    if (kept === undefined) return chunk;
    if (keepFrom < chunk.length) kept.push(chunk.subarray(keepFrom));
    return Buffer.concat(kept);
  };
}
