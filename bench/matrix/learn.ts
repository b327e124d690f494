// Before a cell's load, a few requests through the contender itself, each checked for what it
// means (the address expected, or the page, or the deletion; every etag equal to what a read of
// the same address answers afterwards in the same framing, and on this server also to REST's
// ETag), and from their answers what every answer of the load must be: its status, its sizes
// (one per length of the id), and for gRPC-Web the OK trailer frame it ends with.
import { type Address, addressAt, mergePatch, replaceV1, sameAddress } from "../../lib/address.ts";
import { type Answer, type Carried, meaningOf, send } from "./answers.ts";
import {
  type Framing,
  INPUT_A,
  inputOf,
  type Operation,
  PAGE,
  requestOf,
  type Variant,
  wireOf,
} from "./requests.ts";

/** One request made before the load. */
export interface Sample {
  id: number;
  variant: Variant;
}

/** What the load's answers must be, learnt from the samples. */
export interface Learned {
  status: number;
  lengths: number[];
  /** gRPC-Web: the trailer frame of an OK answer. */
  trailer?: Uint8Array;
  /** The headers of the first answer (the ceilings send the same). */
  headers: Headers;
}

/** Bytes the id takes in an answer: decimal digits in JSON, a varint in protobuf. */
export function idSize(framing: Framing, id: number): number {
  if (framing === "REST" || framing === "GraphQL") return String(id).length;
  let n = 1;
  for (let v = id; v >= 128; v = Math.floor(v / 128)) n++;
  return n;
}

/**
 * The smallest id of each size among 1 to `max` (in decimal and as a varint): the samples of a
 * cell whose answers' size follows the id's.
 */
export function idsOfEachSize(max: number): number[] {
  const starts = new Set([1]);
  for (let p = 10; p <= max; p *= 10) starts.add(p);
  for (let p = 128; p <= max; p *= 128) starts.add(p);
  return [...starts].sort((a, b) => a - b);
}

/** A replace or update is checked from A to B and back (the seeded address is A). */
function variantsOf(op: Operation): Variant[] {
  return op === "replace" || op === "update" ? ["B", "A"] : ["A"];
}

/** What a write leaves at `id`, given what was there. */
function expected(op: Operation, framing: Framing, current: Address, variant: Variant): Address {
  const input = inputOf(variant);
  if (op === "update") return addressAt(current.id, mergePatch(current, input));
  if (op === "replace" && framing === "REST") return addressAt(current.id, input); // version 2
  if (op === "replace") return replaceV1(current, input);
  return current;
}

function same(a: Carried | undefined, b: Address): boolean {
  return a !== undefined && a.id === b.id && sameAddress(a, b);
}

const show = (a: unknown) => JSON.stringify(a)?.slice(0, 300);

/** The address at `id` as the framing reads it (undefined: not found), for checks. */
export async function readBack(
  framing: Framing,
  base: string,
  id: number,
): Promise<Carried | undefined> {
  const answer = await send(base, wireOf(framing, "read"), requestOf("read", framing, id, "A"));
  if (answer.status === 404 || answer.grpcStatus === 5) return undefined;
  return meaningOf("read", framing, answer).addresses[0];
}

/** Where a contender is reached, and whether it is this server (checked against REST too). */
export interface Reach {
  /** The framing's base URL (the HTTP port, or the gRPC listener). */
  base: string;
  /** This server's HTTP port, whose REST ETag every etag must equal; undefined for a ceiling. */
  restBase?: string;
}

async function checkEtag(where: Reach, framing: Framing, carried: Carried, what: string) {
  if (!carried.etag) throw new Error(`${what}: no etag`);
  const back = await readBack(framing, where.base, carried.id);
  if (back?.etag !== carried.etag) {
    throw new Error(`${what}: etag ${carried.etag}, a read answers ${back?.etag}`);
  }
  if (where.restBase !== undefined) {
    const res = await fetch(`${where.restBase}/addresses/${carried.id}`);
    await res.body?.cancel();
    if (res.headers.get("etag") !== carried.etag) {
      throw new Error(`${what}: etag ${carried.etag}, REST's ETag ${res.headers.get("etag")}`);
    }
  }
}

/** Makes the samples through the contender, checks what they mean, and learns the sizes. */
export async function learn(
  op: Operation,
  framing: Framing,
  samples: readonly Sample[],
  where: Reach,
): Promise<Learned> {
  const wire = wireOf(framing, op);
  const sizes = new Set<number>();
  let first: Answer | undefined;
  for (const sample of samples) {
    let current = addressAt(sample.id, INPUT_A);
    for (const variant of variantsOf(op)) {
      const what = `${framing} ${op} of id ${sample.id} (${variant})`;
      const answer = await send(where.base, wire, requestOf(op, framing, sample.id, variant));
      const meaning = meaningOf(op, framing, answer);
      first ??= answer;
      if (answer.status !== first.status) {
        throw new Error(`${what} answered ${answer.status}, before ${first.status}`);
      }
      sizes.add(answer.size);
      if (op === "delete") {
        const back = await readBack(framing, where.base, sample.id);
        if (!meaning.deleted || back !== undefined) {
          throw new Error(`${what}: ${meaning.deleted ? `still read: ${show(back)}` : "refused"}`);
        }
        continue;
      }
      if (op === "page") {
        const want = Array.from({ length: PAGE }, (_, i) => addressAt(i + 1, INPUT_A));
        if (meaning.addresses.length !== PAGE || !meaning.more) {
          throw new Error(`${what}: ${meaning.addresses.length} addresses, more: ${meaning.more}`);
        }
        for (const [i, a] of meaning.addresses.entries()) {
          if (!same(a, want[i]!)) throw new Error(`${what}: ${show(a)} at ${i}`);
          if (a.etag !== undefined) await checkEtag(where, framing, a, what);
        }
        continue;
      }
      const [carried] = meaning.addresses;
      if (op === "create") {
        if (carried === undefined || !(carried.id > 0) || !sameAddress(carried, INPUT_A)) {
          throw new Error(`${what}: ${show(carried)}`);
        }
      } else {
        const want = expected(op, framing, current, variant);
        if (!same(carried, want)) throw new Error(`${what}: ${show(carried)}, not ${show(want)}`);
        current = want;
      }
      await checkEtag(where, framing, carried!, what);
      if (op === "create") {
        // Only the id's size varies: answers of every id size up to 2^53 are good.
        const fixed = answer.size - idSize(framing, carried!.id);
        const most = idSize(framing, Number.MAX_SAFE_INTEGER);
        for (let n = 1; n <= most; n++) sizes.add(fixed + n);
      }
    }
  }
  if (first === undefined) throw new Error(`${framing} ${op}: no sample`);
  return {
    status: first.status,
    lengths: [...sizes].sort((a, b) => a - b),
    ...(first.trailer ? { trailer: first.trailer } : {}),
    headers: first.headers,
  };
}
