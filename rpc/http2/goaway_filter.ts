import { Buffer } from "node:buffer";

const PREFACE_BYTES = 24;
const FRAME_HEADER_BYTES = 9;
const GOAWAY = 0x7;

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
 */
export function createGoawayFilter(): (chunk: Uint8Array) => Uint8Array {
  let preface = PREFACE_BYTES;
  const header = new Uint8Array(FRAME_HEADER_BYTES);
  let headerFill = 0;
  // Payload bytes of the current frame still to come, and whether they are dropped.
  let payload = 0;
  let dropping = false;

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
        payload -= n;
        at += n;
      } else if (headerFill === 0 && chunk.length - at >= FRAME_HEADER_BYTES) {
        // A whole frame header in this chunk (the usual case): read in place.
        payload = (chunk[at]! << 16) | (chunk[at + 1]! << 8) | chunk[at + 2]!;
        dropping = chunk[at + 3] === GOAWAY;
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
        payload = (header[0]! << 16) | (header[1]! << 8) | header[2]!;
        dropping = header[3] === GOAWAY;
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
