// Its two tables alone: the package's entry also loads its stream (de)compressors and
// readable-stream, which nothing here uses.
import huffmanTable from "hpack.js/lib/hpack/huffman.js";
import staticTable from "hpack.js/lib/hpack/static-table.js";
import type { FrameObserver } from "./goaway_filter.ts";

const HEADERS = 0x1;
const CONTINUATION = 0x9;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY = 0x20;
// What an HPACK decoder's dynamic table holds until the client changes it (SETTINGS default).
const DEFAULT_TABLE_BYTES = 4096;
// Streams remembered at once: more than any client may have opened and not yet seen through.
const MAX_REMEMBERED = 512;

/** The lines of one field name a connection's header blocks carried, per stream. */
export interface FieldLineCounter extends FrameObserver {
  /**
   * How many lines of the field the client sent in the first header block of `streamId`
   * (forgotten once taken); undefined when the connection's blocks could not be read.
   */
  take(streamId: number): number | undefined;
}

/**
 * Counts the lines of the field `name` (any case) in the header blocks a client sends on one
 * HTTP/2 connection, read from the bytes themselves (HPACK, RFC 7541).
 *
 * Why: nghttp2 (under Deno's node:http2, as under Node's) silently drops a field line whose value
 * begins or ends with whitespace, which RFC 9113 (8.2.1) makes a malformed request. The stream
 * event then carries only the other lines, so a request with `Authorization: Bearer <a> ` and
 * `Authorization: Bearer <b>` looks like one with the second line alone. Counting what was sent
 * lets the listener read the field as the HTTP port does, where every line arrives.
 *
 * Only names are decoded, and values only to size the entries a block adds to the connection's
 * dynamic table; a value sent without indexing (a token, as clients send it) is skipped unread.
 */
export function createFieldLineCounter(name: string): FieldLineCounter {
  const target = name.toLowerCase();
  // The dynamic table, newest first: each entry's name and its size as HPACK counts it.
  const table: { name: string; size: number }[] = [];
  let tableBytes = 0;
  let maxTableBytes = DEFAULT_TABLE_BYTES;
  let block: Uint8Array[] = [];
  let blockStream = 0;
  const counts = new Map<number, number>();
  let broken = false;

  function add(entryName: string, size: number) {
    table.unshift({ name: entryName, size });
    tableBytes += size;
    evict();
  }

  function evict() {
    while (tableBytes > maxTableBytes && table.length > 0) tableBytes -= table.pop()!.size;
  }

  function nameAt(index: number): string {
    if (index >= 1 && index <= STATIC_NAMES.length) return STATIC_NAMES[index - 1]!;
    const entry = table[index - STATIC_NAMES.length - 1];
    if (entry === undefined) throw new Error(`HPACK index ${index} out of range`);
    return entry.name;
  }

  /** Counts the field's lines in one whole header block, keeping the dynamic table in step. */
  function decode(bytes: Uint8Array): number {
    const reader = new Reader(bytes);
    let lines = 0;
    while (!reader.done()) {
      const first = reader.peek();
      let fieldName: string;
      if (first & 0x80) {
        fieldName = nameAt(reader.integer(7)); // indexed field
      } else if (first & 0x40) {
        // Literal with incremental indexing: the entry's size needs the value's decoded length.
        const index = reader.integer(6);
        fieldName = index === 0 ? reader.text() : nameAt(index);
        add(fieldName, fieldName.length + reader.textLength() + 32);
      } else if (first & 0x20) {
        maxTableBytes = reader.integer(5); // dynamic table size update
        if (maxTableBytes > DEFAULT_TABLE_BYTES) throw new Error("table size over the setting");
        evict();
        continue;
      } else {
        // Literal without indexing or never indexed: the value is skipped.
        const index = reader.integer(4);
        fieldName = index === 0 ? reader.text() : nameAt(index);
        reader.skipString();
      }
      if (fieldName.length === target.length && fieldName.toLowerCase() === target) lines++;
    }
    return lines;
  }

  function endBlock() {
    const bytes = block.length === 1 ? block[0]! : concat(block);
    block = [];
    if (broken) return;
    try {
      const lines = decode(bytes);
      // Only the first block of a stream opens it (a later one is trailers).
      if (lines > 0 && !counts.has(blockStream)) {
        counts.set(blockStream, lines);
        if (counts.size > MAX_REMEMBERED) counts.delete(counts.keys().next().value!);
      }
    } catch {
      // nghttp2 fails such a connection itself; until it does, nothing here is known.
      broken = true;
    }
  }

  return {
    types: new Set([HEADERS, CONTINUATION]),
    frame(type, flags, streamId, payload) {
      if (type === HEADERS) {
        block = [fragmentOf(flags, payload)];
        blockStream = streamId;
      } else block.push(payload);
      if (flags & END_HEADERS) endBlock();
    },
    take(streamId) {
      if (broken) return undefined;
      const lines = counts.get(streamId) ?? 0;
      counts.delete(streamId);
      return lines;
    },
  };
}

/** A HEADERS frame's payload without its padding and priority fields. */
function fragmentOf(flags: number, payload: Uint8Array): Uint8Array {
  let start = 0;
  let end = payload.length;
  if (flags & PADDED) {
    start = 1;
    end -= payload[0] ?? 0;
  }
  if (flags & PRIORITY) start += 5;
  if (start > end) throw new Error("HEADERS frame shorter than its padding");
  return payload.subarray(start, end);
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const STATIC_NAMES: readonly string[] = (staticTable.table as { name: string }[])
  .map((entry) => entry.name);

/** Reads HPACK's primitives (RFC 7541, section 5) off one header block. */
class Reader {
  #at = 0;
  constructor(private readonly bytes: Uint8Array) {}

  done(): boolean {
    return this.#at >= this.bytes.length;
  }

  peek(): number {
    return this.bytes[this.#at]!;
  }

  #byte(): number {
    if (this.#at >= this.bytes.length) throw new Error("header block ends early");
    return this.bytes[this.#at++]!;
  }

  integer(prefixBits: number): number {
    const max = (1 << prefixBits) - 1;
    let value = this.#byte() & max;
    if (value < max) return value;
    for (let shift = 0;; shift += 7) {
      if (shift > 28) throw new Error("HPACK integer too large");
      const byte = this.#byte();
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
    }
  }

  /** A string's bytes and whether they are Huffman-coded. */
  #string(): { huffman: boolean; bytes: Uint8Array } {
    const huffman = (this.peek() & 0x80) !== 0;
    const length = this.integer(7);
    if (this.#at + length > this.bytes.length) throw new Error("string past the block's end");
    const bytes = this.bytes.subarray(this.#at, this.#at + length);
    this.#at += length;
    return { huffman, bytes };
  }

  text(): string {
    const { huffman, bytes } = this.#string();
    const octets = huffman ? huffmanDecode(bytes) : bytes;
    return String.fromCharCode(...octets);
  }

  textLength(): number {
    const { huffman, bytes } = this.#string();
    return huffman ? huffmanDecode(bytes).length : bytes.length;
  }

  skipString(): void {
    this.#string();
  }
}

// The canonical Huffman code of RFC 7541 (Appendix B), from hpack.js's table of [bits, code] per
// symbol: per code length, the first code and the symbols in code order.
const CODES = huffmanTable.encode as [number, number][];
const BY_LENGTH = (() => {
  const symbols = CODES.map(([bits, code], symbol) => ({ bits, code, symbol }))
    .sort((a, b) => a.bits - b.bits || a.code - b.code);
  const lengths: { first: number; symbols: number[] }[] = [];
  for (const { bits, code, symbol } of symbols) {
    lengths[bits] ??= { first: code, symbols: [] };
    lengths[bits]!.symbols.push(symbol);
  }
  return lengths;
})();
const EOS = 256;

/** Decodes a Huffman-coded string (RFC 7541, 5.2), refusing EOS and padding that is not 1s. */
function huffmanDecode(bytes: Uint8Array): number[] {
  const out: number[] = [];
  let code = 0;
  let bits = 0;
  for (const byte of bytes) {
    for (let i = 7; i >= 0; i--) {
      code = (code << 1) | ((byte >> i) & 1);
      bits++;
      const length = BY_LENGTH[bits];
      if (length === undefined) {
        if (bits > 30) throw new Error("no Huffman code that long");
        continue;
      }
      const symbol = length.symbols[code - length.first];
      if (symbol === undefined) continue;
      if (symbol === EOS) throw new Error("EOS inside a Huffman string");
      out.push(symbol);
      code = 0;
      bits = 0;
    }
  }
  if (bits > 7 || code !== (1 << bits) - 1) throw new Error("Huffman padding is not EOS");
  return out;
}
