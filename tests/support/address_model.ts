/**
 * The in-memory model of the address book that tests/fuzz/address_model_test.ts runs every command
 * against: two owners' addresses with the etag each last answered, the ids handed out, the
 * Idempotency-Keys used; and the generators of what commands aim at (whose address, which
 * precondition).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { ADDRESS_FIELD_NAMES, addressInputOf } from "../../lib/address.ts";
import type { Patch, Stored } from "./address_doors.ts";
import type { Address, AddressInput } from "./requests.ts";

/** The two callers of a sequence. */
export type Owner = 0 | 1;

/** An address the model holds: the etag it was last answered with, and the ones before. */
export interface Entry {
  address: Address;
  etag: string;
  old: string[];
}

/** Ids every sequence of one server has seen (the store never hands one out twice). */
export interface Ids {
  seen: Set<number>;
  max: number;
}

export interface Model {
  books: [Map<number, Entry>, Map<number, Entry>];
  ids: Ids;
  /** Every ETag answered for a write in this sequence: no two versions of anything share one. */
  etags: Set<string>;
  /** The first creation of each owner's Idempotency-Key: what it sent and was answered. */
  keys: Map<string, { input: AddressInput; answer: Stored }>;
}

export function newModel(ids: Ids): Model {
  return { books: [new Map(), new Map()], ids, etags: new Set(), keys: new Map() };
}

/** An owner's addresses by ascending id, as a listing answers them. */
export function sorted(model: Model, owner: Owner): Address[] {
  return [...model.books[owner].values()].map((e) => e.address).sort((a, b) => a.id - b.id);
}

/** What a create or replace stores of an input: its texts trimmed (`null` is absent). */
export function trimmed(input: AddressInput): AddressInput {
  const texts = Object.entries(input as Record<string, string | null | undefined>)
    .flatMap(([k, v]) => typeof v === "string" ? [[k, v.trim()]] : []);
  return addressInputOf(Object.fromEntries(texts) as AddressInput);
}

/**
 * What a merge patch makes of an address, by RFC 7396 itself (not lib/address.ts's mergePatch, so
 * the model does not share the server's code): a text replaces the field (trimmed), `null`
 * removes it, a field the patch leaves out stays.
 */
export function patched(address: Address, patch: Patch): Address {
  const out: Record<string, unknown> = { id: address.id };
  for (const name of ADDRESS_FIELD_NAMES) {
    const sent = patch[name];
    const value = sent === undefined ? address[name] : sent?.trim();
    if (value !== undefined && value !== null) out[name] = value;
  }
  return out as Address;
}

const ETAG = /^"[A-Za-z0-9_-]{22}"$/;

/** A generated id (POST, v1 PUT of an absent id): never one an address had before. */
export function noteFreshId(model: Model, id: number, what: string): void {
  assert.ok(Number.isSafeInteger(id) && id > 0, `${what} answered id ${id}`);
  assert.ok(!model.ids.seen.has(id), `${what} handed out id ${id}, which an address had`);
  noteId(model, id);
}

export function noteId(model: Model, id: number): void {
  model.ids.seen.add(id);
  model.ids.max = Math.max(model.ids.max, id);
}

/**
 * Stores what a write answered; a new etag must be one no version of any address had (not this
 * address's before, not another's: each version has its own).
 */
export function noteWrite(model: Model, owner: Owner, stored: Stored, what: string): void {
  assert.match(stored.etag, ETAG, `${what}: etag`);
  const before = model.books[owner].get(stored.address.id);
  const old = before ? [...before.old, before.etag] : [];
  assert.ok(!old.includes(stored.etag), `${what}: etag ${stored.etag} was the address's before`);
  assert.ok(!model.etags.has(stored.etag), `${what}: etag ${stored.etag} was answered before`);
  model.etags.add(stored.etag);
  model.books[owner].set(stored.address.id, { address: stored.address, etag: stored.etag, old });
}

/** True when `ifMatch` lets a write of `entry` go ahead: `*` or its etag (strong comparison). */
export function holds(entry: Entry | undefined, ifMatch: string | undefined): boolean {
  if (ifMatch === undefined) return true;
  if (entry === undefined) return false;
  return ifMatch.split(",").some((tag) => tag.trim() === "*" || tag.trim() === entry.etag);
}

/**
 * True when `If-None-Match` lets a write go ahead (RFC 9110 13.1.2): the caller has no address
 * there, or neither `*` nor any listed tag matches its etag (weak comparison).
 */
export function holdsNone(entry: Entry | undefined, ifNoneMatch: string | undefined): boolean {
  if (ifNoneMatch === undefined || entry === undefined) return true;
  return !ifNoneMatch.split(",").some((part) => {
    const tag = part.trim();
    return tag === "*" || tag === entry.etag || tag === `W/${entry.etag}`;
  });
}

// ---------------------------------------------------------------------------------------------
// What commands aim at

/** Whose id: the caller's own, the other owner's, one deleted in this sequence, or a new one. */
export type Target =
  | { kind: "mine" | "theirs" | "gone"; index: number }
  | { kind: "never"; offset: number };

export const target: fc.Arbitrary<Target> = fc.oneof(
  { weight: 6, arbitrary: fc.nat(40).map((index) => ({ kind: "mine" as const, index })) },
  { weight: 2, arbitrary: fc.nat(40).map((index) => ({ kind: "theirs" as const, index })) },
  { weight: 1, arbitrary: fc.nat(40).map((index) => ({ kind: "gone" as const, index })) },
  { weight: 1, arbitrary: fc.nat(5).map((offset) => ({ kind: "never" as const, offset })) },
);

/** The id a target names now, and the caller's address there if it is theirs. */
export function resolve(model: Model, owner: Owner, aim: Target): { id: number; entry?: Entry } {
  const pick = (ids: number[], index: number) => ids[index % ids.length];
  let id: number | undefined;
  if (aim.kind === "mine") id = pick([...model.books[owner].keys()], aim.index);
  else if (aim.kind === "theirs") id = pick([...model.books[1 - owner as Owner].keys()], aim.index);
  else if (aim.kind === "gone") {
    const held = new Set([...model.books[0].keys(), ...model.books[1].keys()]);
    const gone = [...model.ids.seen].filter((seen) => !held.has(seen));
    id = pick(gone, aim.index);
  }
  id ??= model.ids.max + 1 + (aim.kind === "never" ? aim.offset : 0);
  const entry = model.books[owner].get(id);
  return entry ? { id, entry } : { id };
}

/**
 * An If-Match (GraphQL's `ifMatch`, gRPC's `etag`) or, over REST, an If-None-Match: none, or one
 * that holds or does not.
 */
export type Precondition = "none" | "current" | "stale" | "star" | "weak" | "list" | "made-up";

export const precondition: fc.Arbitrary<Precondition> = fc.oneof(
  { weight: 6, arbitrary: fc.constant("none" as const) },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      "current" as const,
      "stale" as const,
      "star" as const,
      "weak" as const,
      "list" as const,
      "made-up" as const,
    ),
  },
);

/** An etag no address ever has. */
const MADE_UP = '"not-a-version"';

export function ifMatchOf(entry: Entry | undefined, kind: Precondition): string | undefined {
  const current = entry?.etag ?? MADE_UP;
  const stale = entry?.old.at(-1) ?? MADE_UP;
  switch (kind) {
    case "none":
      return undefined;
    case "current":
      return current;
    case "stale":
      return stale;
    case "star":
      return "*";
    case "weak":
      return `W/${current}`;
    case "list":
      return `${stale}, ${current}`;
    case "made-up":
      return MADE_UP;
  }
}
