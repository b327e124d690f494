/**
 * The change feed through each style, as a client of that style reads it: Server-Sent Events
 * over `fetch` (REST), AddressService.WatchAddresses over Connect-ES (gRPC, Connect, gRPC-Web),
 * and the GraphQL subscription through the `graphql-sse` client. Each stream is read into one
 * shape, so one test runs against every style.
 */
import type { Address } from "../../lib/address.ts";
import type { Outcome } from "./address_doors.ts";

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
  for await (const chunk of body.pipeThrough(new TextDecoderStream())) {
    text += chunk;
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
          if (!abort.signal.aborted) console.error("event stream:", error);
        }
        inbox.end();
      })();
      return {
        ok: true,
        value: {
          opened,
          next: (ms = 3000) => inbox.take(ms),
          get ended() {
            return inbox.ended;
          },
          close: async () => {
            abort.abort();
            await Promise.resolve();
          },
        },
      };
    },
  };
}
