/**
 * The change feed through each style, as a client of that style reads it: Server-Sent Events
 * over `fetch` (REST), AddressService.WatchAddresses over Connect-ES (gRPC, Connect, gRPC-Web),
 * and the GraphQL subscription through the `graphql-sse` client. Each stream is read into one
 * shape, so one test runs against every style.
 */
import { Code, ConnectError, type Transport } from "@connectrpc/connect";
import { type Address, ADDRESS_FIELD_NAMES } from "../../lib/address.ts";
import {
  type Address as AddressMessage,
  type AddressEvent,
  AddressEvent_Type,
} from "../../rpc/gen/addresses/v1/addresses_pb.ts";
import type { Outcome } from "./address_doors.ts";
import { bearer } from "./requests.ts";
import { addressClient, errorInfo } from "./rpc_clients.ts";
import { createClient as createSseClient } from "graphql-sse";

/** One change as a client received it. */
export interface ReceivedEvent {
  type: "created" | "replaced" | "updated" | "deleted";
  id: number;
  address?: Address;
  etag?: string;
  /** Resumes after this change. */
  token: string;
}

/** An open stream. */
export interface Watch {
  /** The token of where it opened (REST's first `id:`), when the style tells it at once. */
  readonly opened: string | undefined;
  /** The next change, or undefined when none came within `ms` or the stream ended. */
  next(ms?: number): Promise<ReceivedEvent | undefined>;
  /** True once the server ended the stream (after the changes already received). */
  readonly ended: boolean;
  close(): Promise<void>;
}

/** A caller's changes through one style. */
export interface WatchDoor {
  style: string;
  /** Opens a stream after `after`; a refusal is its error code. */
  open(after?: string): Promise<Outcome<Watch>>;
}

/** A queue of what a stream delivered, taken with a deadline. */
export class Inbox<T> {
  #items: T[] = [];
  #waiting: ((value: T | undefined) => void) | undefined;
  ended = false;
  /** What ended the stream other than the server ending it or the connection cut. */
  failure: unknown;

  push(item: T): void {
    if (this.#waiting) {
      const resolve = this.#waiting;
      this.#waiting = undefined;
      resolve(item);
    } else this.#items.push(item);
  }

  end(): void {
    this.ended = true;
    this.#waiting?.(undefined);
    this.#waiting = undefined;
  }

  take(ms: number): Promise<T | undefined> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.#items.length > 0) return Promise.resolve(this.#items.shift());
    if (this.ended) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting = undefined;
        resolve(undefined);
      }, ms);
      this.#waiting = (value) => {
        clearTimeout(timer);
        resolve(value);
      };
    });
  }
}

/** One Server-Sent Events frame: its fields (the last of each) and whether it had data. */
export interface SseFrame {
  event?: string;
  id?: string;
  data?: string;
  comment?: string;
}

/** Splits an event stream into frames as the HTML standard reads it (LF line ends here). */
export async function* sseFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<SseFrame> {
  let text = "";
  let frame: SseFrame = {};
  const decoder = new TextDecoder();
  for await (const bytes of body) {
    text += decoder.decode(bytes, { stream: true });
    for (let end = text.indexOf("\n"); end >= 0; end = text.indexOf("\n")) {
      const line = text.slice(0, end);
      text = text.slice(end + 1);
      if (line === "") {
        if (Object.keys(frame).length > 0) yield frame;
        frame = {};
        continue;
      }
      const colon = line.indexOf(":");
      const name = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (name === "") frame.comment = value;
      else if (name === "data") {
        frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
      } else if (name === "event" || name === "id") frame[name] = value;
    }
  }
}

/** An open stream over `inbox`, whose `stop` ends the client's side. */
function openWatch(
  opened: string | undefined,
  inbox: Inbox<ReceivedEvent>,
  stop: () => void,
): Outcome<Watch> {
  return {
    ok: true,
    value: {
      opened,
      next: (ms = 3000) => inbox.take(ms),
      get ended() {
        return inbox.ended;
      },
      close: async () => {
        stop();
        await Promise.resolve();
      },
    },
  };
}

/** REST's `GET /addresses/events` over `fetch`. */
export function sseDoor(
  base: string,
  token?: string,
  how: "Last-Event-ID" | "after" = "Last-Event-ID",
): WatchDoor {
  return {
    style: `REST (${how})`,
    async open(after) {
      const headers: Record<string, string> = { accept: "text/event-stream" };
      if (token) headers.authorization = `Bearer ${token}`;
      let url = `${base}/addresses/events`;
      if (after !== undefined) {
        if (how === "after") url += `?after=${encodeURIComponent(after)}`;
        else headers["last-event-id"] = after;
      }
      const abort = new AbortController();
      const response = await fetch(url, { headers, signal: abort.signal });
      if (!response.ok) {
        const body = await response.json();
        return { ok: false, code: body.errors[0].error, problems: body.errors.length };
      }
      if (response.headers.get("content-type") !== "text/event-stream; charset=utf-8") {
        throw new Error(`content-type ${response.headers.get("content-type")}`);
      }
      const inbox = new Inbox<ReceivedEvent>();
      const frames = sseFrames(response.body!);
      // The first frame is the opening position: an id without data.
      const first = await frames.next();
      const opened = first.done ? undefined : first.value.id;
      if (!first.done && first.value.data !== undefined) {
        throw new Error("data before the position");
      }
      void (async () => {
        try {
          for await (const frame of frames) {
            if (frame.data === undefined) continue; // a comment
            const data = JSON.parse(frame.data);
            if (data.type !== frame.event) {
              throw new Error(`event ${frame.event} with ${frame.data}`);
            }
            inbox.push({ ...data, token: frame.id! });
          }
        } catch (error) {
          // A connection cut (the server killed) ends the stream like the server ending it.
          if (!abort.signal.aborted && !(error instanceof TypeError)) inbox.failure = error;
        }
        inbox.end();
      })();
      return openWatch(opened, inbox, () => abort.abort());
    },
  };
}

const TYPES: Record<number, ReceivedEvent["type"]> = {
  [AddressEvent_Type.CREATED]: "created",
  [AddressEvent_Type.REPLACED]: "replaced",
  [AddressEvent_Type.UPDATED]: "updated",
  [AddressEvent_Type.DELETED]: "deleted",
};

function addressFrom(message: AddressMessage): Address {
  return addressFromFields(message as unknown as Record<string, unknown>);
}

function receivedFrom(event: AddressEvent): ReceivedEvent {
  const type = TYPES[event.type];
  if (type === undefined) throw new Error(`an event of type ${event.type} after the first`);
  return {
    type,
    id: Number(event.id),
    ...(event.address === undefined
      ? {}
      : { address: addressFrom(event.address), etag: event.address.etag }),
    token: event.resumeToken,
  };
}

/** AddressService.WatchAddresses over a Connect-ES transport (gRPC, Connect, gRPC-Web). */
export function rpcWatchDoor(style: string, transport: Transport, token?: string): WatchDoor {
  const client = addressClient(transport);
  return {
    style,
    async open(after) {
      const abort = new AbortController();
      const stream = client.watchAddresses({ resumeToken: after ?? "" }, {
        headers: bearer(token),
        signal: abort.signal,
      })[Symbol.asyncIterator]();
      let first: IteratorResult<AddressEvent>;
      try {
        first = await stream.next();
      } catch (error) {
        const failure = ConnectError.from(error);
        return { ok: false, code: errorInfo(failure)?.reason ?? failure.message, problems: 1 };
      }
      if (first.done || first.value.type !== AddressEvent_Type.TYPE_UNSPECIFIED) {
        throw new Error("the first message is not the stream's position");
      }
      const inbox = new Inbox<ReceivedEvent>();
      void (async () => {
        try {
          for (let next = await stream.next(); !next.done; next = await stream.next()) {
            inbox.push(receivedFrom(next.value));
          }
        } catch (error) {
          // A connection cut (the server killed or restarted) ends the stream like the server
          // ending it; anything else is kept for the test to see.
          const failure = ConnectError.from(error);
          const cut = failure.code === Code.Unavailable || failure.code === Code.Canceled;
          if (!abort.signal.aborted && !cut) inbox.failure = failure;
        }
        inbox.end();
      })();
      return openWatch(first.value.resumeToken, inbox, () => abort.abort());
    },
  };
}

const SUBSCRIPTION = `subscription Events($after: String) {
  addressEvents(after: $after) {
    type
    id
    address { ${ADDRESS_FIELD_NAMES.join(" ")} id etag }
    cursor
  }
}`;

/**
 * The `addressEvents` subscription through the `graphql-sse` client from npm (distinct
 * connections mode), unchanged. Its first result is the position it opened at (OPENED), or a
 * refusal (errors).
 */
export function graphqlWatchDoor(base: string, token?: string): WatchDoor {
  return {
    style: "GraphQL",
    async open(after) {
      const client = createSseClient({
        url: `${base}/graphql`,
        headers: token ? { authorization: `Bearer ${token}` } : {},
        singleConnection: false,
        retryAttempts: 0,
      });
      const inbox = new Inbox<ReceivedEvent>();
      let refusal: string | undefined;
      let opened: string | undefined;
      let connected!: () => void;
      const open = new Promise<void>((resolve) => (connected = resolve));
      const dispose = client.subscribe(
        { query: SUBSCRIPTION, variables: { after: after ?? null } },
        {
          next(result) {
            const r = result as {
              data?: { addressEvents: Record<string, unknown> } | null;
              errors?: { extensions?: { code?: string } }[];
            };
            if (r.errors !== undefined) {
              refusal = r.errors[0]?.extensions?.code ?? "(no code)";
              return connected();
            }
            const e = r.data!.addressEvents as {
              type: string;
              id: string;
              address: Record<string, unknown> | null;
              cursor: string;
            };
            if (e.type === "OPENED") {
              opened = e.cursor;
              return connected();
            }
            const address = e.address === null ? undefined : e.address;
            inbox.push({
              type: e.type.toLowerCase() as ReceivedEvent["type"],
              id: Number(e.id),
              ...(address === undefined ? {} : {
                address: addressFromFields(address),
                etag: address.etag as string,
              }),
              token: e.cursor,
            });
          },
          error(error) {
            inbox.failure = error;
            inbox.end();
            connected();
          },
          complete() {
            inbox.end();
            connected();
          },
        },
      );
      await open;
      if (refusal !== undefined || opened === undefined) {
        dispose();
        client.dispose();
        return { ok: false, code: refusal ?? "(ended before it opened)", problems: 1 };
      }
      return openWatch(opened, inbox, () => {
        dispose();
        client.dispose();
      });
    },
  };
}

function addressFromFields(fields: Record<string, unknown>): Address {
  const address: Record<string, unknown> = { id: Number(fields.id) };
  for (const name of ADDRESS_FIELD_NAMES) {
    const value = fields[name];
    if (typeof value === "string" && value !== "") address[name] = value;
  }
  return address as Address;
}

/**
 * REST's event stream over a bare TCP connection, for what only a socket shows: closing it is a
 * client gone, whatever a `fetch` implementation does with its connections (Deno's, with three
 * streams open to one host, does not close the one it aborts). It opens and closes only: `next`
 * tells nothing, so use it for the limits, not for the events.
 */
export function sseSocketDoor(base: string, token: string): WatchDoor {
  return {
    style: "REST (socket)",
    async open() {
      const url = new URL(base);
      const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
      const request = `GET /addresses/events HTTP/1.1\r\nHost: ${url.host}\r\n` +
        `Authorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`;
      await conn.write(new TextEncoder().encode(request));
      const decoder = new TextDecoder();
      let head = "";
      const buffer = new Uint8Array(16 * 1024);
      while (!head.includes("\r\n\r\n")) {
        const n = await conn.read(buffer);
        if (n === null) break;
        head += decoder.decode(buffer.subarray(0, n));
      }
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
      if (status !== 200) {
        conn.close();
        const code = /"error":"([a-z-]+)"/.exec(head)?.[1] ?? `HTTP ${status}`;
        return { ok: false, code, problems: 1 };
      }
      const inbox = new Inbox<ReceivedEvent>();
      return openWatch(/\nid: ([A-Za-z0-9_-]+)/.exec(head)?.[1], inbox, () => {
        conn.close();
        inbox.end();
      });
    },
  };
}
