/**
 * HTTP/2 written by hand over a TCP socket: for tests that must send what no well-behaved client
 * sends (calls cut off mid-flight, floods of RST_STREAM, CONTINUATION or SETTINGS frames, a
 * field twice, a `:path` no client library would send) or close a connection at an exact
 * moment, with FIN or RST; `answerOn` reads what the server answered on a stream.
 */
import { Buffer } from "node:buffer";
import net from "node:net";
import hpack from "hpack.js";

export const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const Flag = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4 } as const;

/** One frame: 9-byte header, then the payload. */
export function frame(
  type: number,
  flags: number,
  streamId: number,
  payload: Uint8Array = new Uint8Array(),
): Buffer {
  const out = Buffer.alloc(9 + payload.length);
  out.writeUIntBE(payload.length, 0, 3);
  out[3] = type;
  out[4] = flags;
  out.writeUInt32BE(streamId & 0x7fffffff, 5);
  out.set(payload, 9);
  return out;
}

/** HPACK integer with an n-bit prefix (RFC 7541, 5.1); `first` holds the bits above the prefix. */
function hpackInt(value: number, prefixBits: number, first = 0): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [first | value];
  const bytes = [first | max];
  value -= max;
  while (value >= 128) {
    bytes.push((value % 128) | 0x80);
    value = Math.floor(value / 128);
  }
  bytes.push(value);
  return bytes;
}

/** A header block of literal fields without indexing (no Huffman): valid HPACK, state-free. */
export function headerBlock(headers: [string, string][]): Buffer {
  const bytes: number[] = [];
  for (const [name, value] of headers) {
    const n = Buffer.from(name);
    const v = Buffer.from(value);
    bytes.push(0x00, ...hpackInt(n.length, 7), ...n, ...hpackInt(v.length, 7), ...v);
  }
  return Buffer.from(bytes);
}

/** The request headers of a unary gRPC call. */
export function grpcCallHeaders(path: string, extra: [string, string][] = []): Buffer {
  return headerBlock([
    [":method", "POST"],
    [":scheme", "http"],
    [":path", path],
    [":authority", "localhost"],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
    ...extra,
  ]);
}

/** An empty protobuf message in an uncompressed gRPC envelope. */
const EMPTY_MESSAGE = Buffer.alloc(5);

/** HEADERS and an ending DATA frame of one unary gRPC call on `streamId`. */
export function grpcCall(streamId: number, path = "/books.v1.BooksService/books"): Buffer {
  return Buffer.concat([
    frame(FrameType.HEADERS, Flag.END_HEADERS, streamId, grpcCallHeaders(path)),
    frame(FrameType.DATA, Flag.END_STREAM, streamId, EMPTY_MESSAGE),
  ]);
}

/** Preface and an empty SETTINGS frame: what a client sends first. */
export function clientStart(): Buffer {
  return Buffer.concat([PREFACE, frame(FrameType.SETTINGS, 0, 0)]);
}

/** A frame the peer sent. */
interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/** A raw HTTP/2 client connection and what it has seen. */
export interface RawConnection {
  socket: net.Socket;
  /** Frames received so far. */
  frames: Frame[];
  /** Resolves once the connection is closed (by either side), with how it ended. */
  closed: Promise<{ error: string | undefined }>;
  /** Resolves once the server has closed its side (FIN or reset), even if this side stays open. */
  ended: Promise<void>;
  /** Whether the server has closed (FIN, RST or GOAWAY then close). */
  isClosed(): boolean;
  write(bytes: Uint8Array): void;
  /** Resolves when a frame matching `match` arrives (or rejects when the connection closes first). */
  waitFor(match: (f: Frame) => boolean): Promise<Frame>;
}

/**
 * Opens a TCP connection to `url`'s host and port, from `localAddress` if given. The server's
 * SETTINGS are acknowledged when `ackSettings` is true (the default), as every client does.
 */
export function connectRaw(
  url: string,
  options: {
    localAddress?: string;
    ackSettings?: boolean;
    /** Keep the client's side open after the server's FIN, as a client that ignores it would. */
    halfOpen?: boolean;
  } = {},
): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  const socket = net.connect({
    host: hostname,
    port: Number(port),
    ...(options.localAddress ? { localAddress: options.localAddress } : {}),
    allowHalfOpen: options.halfOpen === true,
  });
  const frames: Frame[] = [];
  const waiters: {
    match: (f: Frame) => boolean;
    resolve: (f: Frame) => void;
    reject: (e: Error) => void;
  }[] = [];
  let pending: Buffer = Buffer.alloc(0);
  let isClosed = false;
  // Where the bytes this client wrote stand: an ACK may only follow the client's own preface
  // and first SETTINGS frame, and never land inside a frame the client is part way through.
  const boundary = frameBoundaries();
  let unacked = 0;
  const ack = () => {
    for (; boundary.settled() && unacked > 0; unacked--) {
      if (!socket.destroyed && socket.writable) {
        socket.write(frame(FrameType.SETTINGS, Flag.ACK, 0));
      }
    }
  };
  const closed = new Promise<{ error: string | undefined }>((resolve) => {
    let error: string | undefined;
    socket.on("error", (e: Error) => (error = e.message));
    socket.on("close", () => {
      isClosed = true;
      for (const w of waiters.splice(0)) w.reject(new Error("the connection closed"));
      resolve({ error });
    });
  });
  const ended = new Promise<void>((resolve) => {
    socket.once("end", resolve);
    socket.once("close", resolve);
  });
  socket.on("data", (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3);
      if (pending.length < 9 + length) break;
      const f: Frame = {
        type: pending[3]!,
        flags: pending[4]!,
        streamId: pending.readUInt32BE(5) & 0x7fffffff,
        payload: pending.subarray(9, 9 + length),
      };
      pending = pending.subarray(9 + length);
      frames.push(f);
      if (f.type === FrameType.SETTINGS && !(f.flags & Flag.ACK) && options.ackSettings !== false) {
        // Sent once the client's preface is out (before it, the ACK would be a bad preface).
        unacked++;
        ack();
      }
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (waiters[i]!.match(f)) waiters.splice(i, 1)[0]!.resolve(f);
      }
    }
  });
  return new Promise((resolve, reject) => {
    socket.once("error", reject);
    socket.once("connect", () => {
      socket.off("error", reject);
      resolve({
        socket,
        frames,
        closed,
        ended,
        isClosed: () => isClosed,
        write: (bytes) => {
          if (!socket.destroyed && socket.writable) socket.write(bytes);
          boundary.wrote(bytes);
          ack();
        },
        waitFor: (match) => {
          const seen = frames.find(match);
          if (seen) return Promise.resolve(seen);
          if (isClosed) return Promise.reject(new Error("the connection closed"));
          return new Promise((resolve, reject) => waiters.push({ match, resolve, reject }));
        },
      });
    });
  });
}

/**
 * Follows the frames a client writes, chunk by chunk: `settled()` is true when the preface and
 * at least one whole frame are written and the last write ended on a frame boundary.
 */
function frameBoundaries() {
  let magicLeft = PREFACE.length;
  const header: number[] = [];
  let payloadLeft = 0;
  let frames = 0;
  return {
    wrote(bytes: Uint8Array) {
      let at = 0;
      while (at < bytes.length) {
        if (magicLeft > 0) {
          const n = Math.min(magicLeft, bytes.length - at);
          magicLeft -= n;
          at += n;
        } else if (payloadLeft > 0) {
          const n = Math.min(payloadLeft, bytes.length - at);
          payloadLeft -= n;
          at += n;
          if (payloadLeft === 0) frames++;
        } else {
          header.push(bytes[at++]!);
          if (header.length === 9) {
            payloadLeft = (header[0]! << 16) | (header[1]! << 8) | header[2]!;
            header.length = 0;
            if (payloadLeft === 0) frames++;
          }
        }
      }
    },
    settled: () => magicLeft === 0 && frames > 0 && header.length === 0 && payloadLeft === 0,
  };
}

/** What the server answered on one stream of a raw connection. */
interface RawAnswer {
  /** `:status` of the first header block. */
  status: number;
  /** Every field of the stream's header blocks (response headers, then trailers). */
  fields: Headers;
  body: Buffer;
  /** Whether the server reset the stream (RST_STREAM) instead of ending it. */
  reset: boolean;
}

// deno-lint-ignore no-explicit-any
type HpackDecompressor = { write(data: Buffer): void; execute(): void; read(): any };

/**
 * Waits until the server ends (or resets) stream `streamId`, then reads its answer: the header
 * blocks of the whole connection are decoded in order with hpack.js, as HPACK's dynamic table
 * spans the connection. Fails when no end comes within `timeoutMs`.
 */
export async function answerOn(
  conn: RawConnection,
  streamId: number,
  timeoutMs = 10_000,
): Promise<RawAnswer> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const ended = await Promise.race([
    conn.waitFor((f) =>
      f.streamId === streamId &&
      (f.type === FrameType.RST_STREAM ||
        ((f.type === FrameType.HEADERS || f.type === FrameType.DATA) &&
          (f.flags & Flag.END_STREAM) !== 0))
    ),
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no end of stream ${streamId} within ${timeoutMs} ms`)),
        timeoutMs,
      );
    }),
  ]).finally(() => clearTimeout(timer));
  const decompressor: HpackDecompressor = hpack.decompressor.create({ table: { maxSize: 4096 } });
  const fields = new Headers();
  const body: Buffer[] = [];
  let status = 0;
  let block: Buffer[] = [];
  for (const f of conn.frames) {
    if (f.type === FrameType.HEADERS || f.type === FrameType.CONTINUATION) {
      block.push(f.type === FrameType.HEADERS ? headersFragment(f) : f.payload);
      if (!(f.flags & Flag.END_HEADERS)) continue;
      decompressor.write(Buffer.concat(block));
      decompressor.execute();
      block = [];
      for (let field; (field = decompressor.read()) !== null;) {
        if (f.streamId !== streamId) continue;
        if (field.name === ":status") status ||= Number(field.value);
        else fields.append(field.name, field.value);
      }
    } else if (f.type === FrameType.DATA && f.streamId === streamId) {
      body.push(unpadded(f));
    }
    if (f === ended) break;
  }
  return { status, fields, body: Buffer.concat(body), reset: ended.type === FrameType.RST_STREAM };
}

const PADDED = 0x8;
const PRIORITY = 0x20;

function unpadded(f: Frame): Buffer {
  return f.flags & PADDED ? f.payload.subarray(1, f.payload.length - f.payload[0]!) : f.payload;
}

function headersFragment(f: Frame): Buffer {
  const payload = unpadded(f);
  return f.flags & PRIORITY ? payload.subarray(5) : payload;
}
