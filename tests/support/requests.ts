/**
 * The requests socket tests send over `fetch`: REST (the address book, JSON bodies, tokens),
 * GraphQL and Connect with JSON. Each helper calls the global `fetch` when it sends, so every
 * answer of a server started by tests/support/server.ts or served.ts passes the contract check
 * (tests/support/contract.ts) on its way to the test.
 */
import assert from "node:assert/strict";
import type { components } from "../../clients/gen/books_api.ts";
import {
  ADDRESS_FIELD_NAMES,
  ADDRESS_FIELDS,
  AddressInputSchema,
  EXAMPLE_INPUT,
} from "../../lib/address.ts";

/** Request or response header fields, by lower-case name. */
export type Fields = Record<string, string>;

export const JSON_TYPE: Fields = { "content-type": "application/json" };
export const MERGE_PATCH = "application/merge-patch+json";
export const V2 = "application/vnd.books.v2+json";
/** The one RPC method, as a path on either port. */
export const BOOKS_PATH = "/books.v1.BooksService/books";

/** An address as the API stores and answers it (the generated client's type). */
export type Address = components["schemas"]["Address"];

/** The body of a create or PUT (the generated client's type). */
export type AddressInput = components["schemas"]["AddressInput"];

/** The Authorization field for a bearer token; no field without one. */
export function bearer(token: string | undefined): Fields {
  return token === undefined ? {} : { authorization: `Bearer ${token}` };
}

/** The Idempotency-Key field; no field without a key. */
export function idempotencyKey(key: string | undefined): Fields {
  return key === undefined ? {} : { "idempotency-key": key };
}

/** An address input with only the name chosen (every other field its example). */
export function named(name: string): AddressInput {
  return { ...EXAMPLE_INPUT, name };
}

/**
 * A valid input that differs with `tag`: every field its example followed by the tag, where the
 * field's rules allow that, else its example.
 */
export function taggedInput(tag: string | number): AddressInput {
  const input: Record<string, string> = {};
  for (const name of ADDRESS_FIELD_NAMES) {
    const tagged = `${ADDRESS_FIELDS[name].example} ${tag}`;
    const valid = AddressInputSchema.shape[name].safeParse(tagged).success;
    input[name] = valid ? tagged : ADDRESS_FIELDS[name].example;
  }
  return input as AddressInput;
}

/**
 * Sends `body` as JSON (`Content-Type: application/json` unless `headers` name another): a string
 * goes as written (to send malformed JSON on purpose), anything else through JSON.stringify.
 */
export function sendJson(
  url: string,
  method: string,
  body: unknown,
  headers: Fields = {},
): Promise<Response> {
  return fetch(url, {
    method,
    headers: { ...JSON_TYPE, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** What a test reads of an answer: its status and headers, its text and that text as JSON. */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  /** The text parsed, when the answer says it is JSON (`…/json`, `…+json`); else undefined. */
  // deno-lint-ignore no-explicit-any
  body: any;
}

const JSON_MEDIA = /^application\/(?:[\w.-]+\+)?json$/i;

/** Reads the whole answer. */
export async function answerOf(res: Response): Promise<Answer> {
  const text = await res.text();
  const type = (res.headers.get("content-type") ?? "").split(";")[0]!.trim();
  const body = text !== "" && JSON_MEDIA.test(type) ? JSON.parse(text) : undefined;
  return { status: res.status, headers: res.headers, text, body };
}

/** The code of the first error of a detailed error body (`errors[0].error`). */
export async function errorCode(res: Response): Promise<string> {
  return (await res.json()).errors[0].error;
}

/** `POST /graphql` with a JSON body (a string goes as written). */
export function graphql(base: string, body: unknown, headers: Fields = {}): Promise<Response> {
  return sendJson(`${base}/graphql`, "POST", body, headers);
}

/** A Connect call of BooksService/books with a JSON body (`{}` unless given) on `base`. */
export function connectJson(base: string, headers: Fields = {}, body = "{}"): Promise<Response> {
  return sendJson(`${base}${BOOKS_PATH}`, "POST", body, headers);
}

/** The address book as one caller sees it: `headers` (a token, a language) go with each call. */
export interface AddressBook {
  /** POST /addresses. */
  create(input: unknown, headers?: Fields): Promise<Response>;
  /** PUT /addresses/{id}, JSON (version 1) unless `headers` name another type. */
  put(id: number | string, input: unknown, headers?: Fields): Promise<Response>;
  /** PATCH /addresses/{id} with a JSON Merge Patch. */
  patch(id: number | string, patch: unknown, headers?: Fields): Promise<Response>;
  get(id: number | string, headers?: Fields): Promise<Response>;
  delete(id: number | string, headers?: Fields): Promise<Response>;
  /** GET /addresses/export. */
  export(headers?: Fields): Promise<Response>;
  /** DELETE /addresses: the caller's erasure. */
  erase(headers?: Fields): Promise<Response>;
  /** Every address the caller lists, page by page (`limit` a page), each page checked. */
  listAll(limit?: number): Promise<Address[]>;
}

/** The address book at `base` for the caller `headers` identify (none: anonymous). */
export function addressBook(base: string, caller: Fields = {}): AddressBook {
  const url = (id?: number | string) => `${base}/addresses${id === undefined ? "" : `/${id}`}`;
  const send = (method: string, target: string, headers: Fields) =>
    fetch(target, { method, headers: { ...caller, ...headers } });
  return {
    create: (input, headers = {}) => sendJson(url(), "POST", input, { ...caller, ...headers }),
    put: (id, input, headers = {}) => sendJson(url(id), "PUT", input, { ...caller, ...headers }),
    patch: (id, patch, headers = {}) =>
      sendJson(url(id), "PATCH", patch, { ...caller, "content-type": MERGE_PATCH, ...headers }),
    get: (id, headers = {}) => send("GET", url(id), headers),
    delete: (id, headers = {}) => send("DELETE", url(id), headers),
    export: (headers = {}) => send("GET", url("export"), headers),
    erase: (headers = {}) => send("DELETE", url(), headers),
    async listAll(limit = 500) {
      const all: Address[] = [];
      let cursor: string | null = null;
      for (let pages = 0;; pages++) {
        assert.ok(pages < 1000, "paging does not end");
        const query: string = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
        const res = await send("GET", `${url()}?limit=${limit}${query}`, {});
        const page = await res.json();
        assert.equal(res.status, 200, JSON.stringify(page));
        assert.ok(page.addresses.length <= limit, "a page is longer than its limit");
        all.push(...page.addresses);
        cursor = page.nextCursor;
        if (cursor === null) return all;
      }
    },
  };
}
