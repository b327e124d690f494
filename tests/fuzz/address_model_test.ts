/**
 * Model-based test of the address book, one behaviour through three doors (docs/fuzzing.md):
 * random sequences of create (also with an Idempotency-Key from a small pool: a replay answers
 * the first creation, another address is `idempotency-key-reused`), get, list (pages of 1 to 7,
 * each page through any style, the cursor of one style resuming in another), replace (version
 * 1), update (merge patch, field mask), delete, with preconditions that hold or not (If-Match in
 * every style, If-None-Match over REST, evaluated in RFC 9110's order), bad input, version 2 PUT
 * (REST only, with If-None-Match too), page tokens used by the other owner or edited, and a
 * restart on the same KV file. Each command is sent by one of two
 * owners through REST (the generated client), GraphQL (the typed documents) or AddressService
 * (native gRPC on the gRPC listener, Connect and gRPC-Web on the HTTP port), against the real
 * server with authentication on and against a plain in-memory model (tests/support/
 * address_model.ts). Every answer must be the model's, whichever style made the changes before
 * it; a refusal has the same code (and number of problems) in every style and stores nothing;
 * one owner never sees or changes the other's addresses (nor pages with their tokens); no two
 * versions of any addresses share an etag; after every write both owners' books, listed over
 * REST, are exactly the model's.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import type { Transport } from "@connectrpc/connect";
import {
  ADDRESS_FIELD_NAMES,
  AddressInputSchema,
  EXAMPLE_INPUT,
  OPTIONAL_FIELD_NAMES,
  sameAddress,
  V1_KEPT,
} from "../../lib/address.ts";
import {
  type AddressDoor,
  graphqlDoor,
  type Outcome,
  type Patch,
  restDoor,
  rpcDoor,
  type RpcFraming,
  rpcTransport,
} from "../support/address_doors.ts";
import { BAD_ETAG, type Fault, fault } from "../support/address_faults.ts";
import {
  type Entry,
  holds,
  holdsNone,
  type Ids,
  ifMatchOf,
  type Model,
  newModel,
  noteFreshId,
  noteId,
  noteWrite,
  type Owner,
  patched,
  type Precondition,
  precondition,
  resolve,
  sorted,
  type Target,
  target,
  trimmed,
} from "../support/address_model.ts";
import { FUZZ_SCALE, FUZZ_SEED } from "../support/fuzz.ts";
import { validAddress } from "../support/fuzz_http.ts";
import {
  type Address,
  addressBook,
  type AddressInput,
  bearer,
  named,
} from "../support/requests.ts";
import { startTestServer, type TestServer } from "../support/server.ts";
import {
  graphqlWatchDoor,
  type ReceivedEvent,
  rpcWatchDoor,
  sseDoor,
  type Watch,
  type WatchDoor,
} from "../support/event_doors.ts";
import { grpcWebTransport } from "../support/rpc_clients.ts";
import { hsToken, SECRET } from "../support/tokens.ts";
import { MAX_BLOCK } from "../../store/addresses/id_blocks.ts";

type Style = "REST" | "GraphQL" | RpcFraming;

const style: fc.Arbitrary<Style> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom<Style>("REST", "GraphQL", "gRPC") },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Style>(
      "Connect (HTTP port)",
      "Connect JSON (HTTP port)",
      "gRPC-Web (HTTP port)",
    ),
  },
);
const owner: fc.Arbitrary<Owner> = fc.constantFrom<Owner>(0, 1);
const OWNER_NAMES = ["alice", "bob"];

/** The system under test: one server for every sequence (each has its own two owners). */
interface Real {
  server: TestServer;
  env: Record<string, string>;
  tokens: [string, string];
  /** Connect-ES transports to the server running now (a restart starts another). */
  transports: Map<RpcFraming, Transport>;
}

function door(real: Real, who: Owner, through: Style): AddressDoor {
  const token = real.tokens[who];
  if (through === "REST") return restDoor(real.server.httpUrl, token);
  if (through === "GraphQL") return graphqlDoor(real.server.httpUrl, token);
  let transport = real.transports.get(through);
  if (transport === undefined) {
    real.transports.set(through, transport = rpcTransport(real.server, through));
  }
  return rpcDoor(transport, through, token);
}

/** After every write: both owners' books, listed over REST, are exactly the model's. */
async function compare(model: Model, real: Real, step: string): Promise<void> {
  for (const who of [0, 1] as const) {
    const listed = await addressBook(real.server.httpUrl, bearer(real.tokens[who])).listAll();
    assert.deepEqual(listed, sorted(model, who), `after ${step}: ${OWNER_NAMES[who]}'s addresses`);
  }
}

function ok<T>(outcome: Outcome<T>, what: string): T {
  if (!outcome.ok) assert.fail(`${what}: refused with ${outcome.code}, the model says it succeeds`);
  return outcome.value;
}

function refused(outcome: Outcome<unknown>, code: string, what: string, problems = 1): void {
  if (outcome.ok) {
    assert.fail(`${what}: succeeded (${JSON.stringify(outcome.value)}), the model says ${code}`);
  }
  assert.deepEqual({ code: outcome.code, problems: outcome.problems }, { code, problems }, what);
}

/**
 * True when a write's conditions fail on the caller's address `entry` (none: undefined) by RFC
 * 9110's order, If-Match then If-None-Match, after checking that `outcome` is that refusal.
 */
function failedCondition(
  outcome: Outcome<unknown>,
  entry: Entry | undefined,
  ifMatch: string | undefined,
  ifNoneMatch: string | undefined,
  what: string,
): boolean {
  const failed = !holds(entry, ifMatch)
    ? `If-Match ${ifMatch}`
    : !holdsNone(entry, ifNoneMatch)
    ? `If-None-Match ${ifNoneMatch}`
    : undefined;
  if (failed === undefined) return false;
  refused(outcome, "precondition-failed", `${what} (${failed})`);
  return true;
}

/** The created flag or replay flag where a style answers one. */
function flag(value: boolean | undefined, expected: boolean, what: string): void {
  if (value !== undefined) assert.equal(value, expected, what);
}

/** One command by one owner through one style; every write is followed by the comparison. */
abstract class Step implements fc.AsyncCommand<Model, Real> {
  constructor(readonly who: Owner, readonly through: Style) {}
  readonly writes: boolean = true;
  check = () => true;
  abstract act(model: Model, doorway: AddressDoor, what: string, real: Real): Promise<void>;
  abstract describe(): string;
  async run(model: Model, real: Real) {
    const what = this.toString();
    await this.act(model, door(real, this.who, this.through), what, real);
    if (this.writes) await compare(model, real, what);
  }
  toString = () => `${OWNER_NAMES[this.who]} via ${this.through}: ${this.describe()}`;
}

class Create extends Step {
  constructor(who: Owner, through: Style, readonly input: AddressInput, readonly key?: string) {
    super(who, through);
  }
  async act(model: Model, doorway: AddressDoor, what: string) {
    const outcome = await doorway.create(this.input, this.key);
    const input = trimmed(this.input);
    const slot = `${this.who}\n${this.key}`;
    const first = this.key === undefined ? undefined : model.keys.get(slot);
    if (first && !sameAddress(first.input, input)) {
      refused(outcome, "idempotency-key-reused", what);
      return;
    }
    const { replayed, ...stored } = ok(outcome, what);
    if (first) {
      // The first creation's answer again, whichever style sent either; nothing created.
      assert.deepEqual(stored, first.answer, what);
      flag(replayed, true, `${what}: replayed`);
      return;
    }
    flag(replayed, false, `${what}: replayed`);
    noteFreshId(model, stored.address.id, what);
    assert.deepEqual(stored.address, { id: stored.address.id, ...input }, what);
    noteWrite(model, this.who, stored, what);
    if (this.key !== undefined) model.keys.set(slot, { input, answer: stored });
  }
  describe = () => `create(${JSON.stringify(this.input)}, key ${this.key})`;
}

class Get extends Step {
  override readonly writes = false;
  constructor(who: Owner, through: Style, readonly aim: Target) {
    super(who, through);
  }
  async act(model: Model, doorway: AddressDoor, what: string) {
    const { id, entry } = resolve(model, this.who, this.aim);
    const outcome = await doorway.get(id);
    if (!entry) return refused(outcome, "address-not-found", `${what} (id ${id})`);
    assert.deepEqual(ok(outcome, what), { address: entry.address, etag: entry.etag }, what);
  }
  describe = () => `get(${JSON.stringify(this.aim)})`;
}

/** Every page of the owner's listing, page i through styles[i % n]: cursors cross styles. */
class List extends Step {
  override readonly writes = false;
  constructor(who: Owner, readonly size: number, readonly styles: Style[]) {
    super(who, styles[0]!);
  }
  async act(model: Model, _: AddressDoor, what: string, real: Real) {
    const expected = sorted(model, this.who);
    const listed: Address[] = [];
    let cursor: string | undefined;
    for (let i = 0;; i++) {
      const through = this.styles[i % this.styles.length]!;
      const where = `${what}, page ${i + 1} via ${through}`;
      const page = ok(await door(real, this.who, through).page(this.size, cursor), where);
      assert.equal(page.items.length, Math.min(this.size, expected.length - listed.length), where);
      for (const { etag, ...address } of page.items) {
        listed.push(address);
        const entry = model.books[this.who].get(address.id);
        if (etag !== undefined) assert.equal(etag, entry?.etag, `${where}: etag of ${address.id}`);
      }
      if (page.next === null) break;
      assert.ok(listed.length < expected.length, `${where}: a next page after the last`);
      cursor = page.next;
    }
    assert.deepEqual(listed, expected, what);
  }
  describe = () => `list(pages of ${this.size} via ${this.styles.join(", ")})`;
}

/**
 * A command on one id (resolved when it runs), with a precondition: If-Match in any style, and
 * If-None-Match (`none`) through REST alone.
 */
abstract class Aimed extends Step {
  constructor(
    who: Owner,
    through: Style,
    readonly aim: Target,
    readonly pre: Precondition,
    readonly none: Precondition = "none",
  ) {
    super(who, through);
  }
  /** The id aimed at now, the caller's address there if any, and the conditions to send. */
  aimAt(model: Model) {
    const { id, entry } = resolve(model, this.who, this.aim);
    return {
      id,
      entry,
      ifMatch: ifMatchOf(entry, this.pre),
      ifNoneMatch: ifMatchOf(entry, this.none),
    };
  }
  describe = () =>
    `${this.name()}(${JSON.stringify(this.aim)}, If-Match ${this.pre}, If-None-Match ${this.none})`;
  abstract name(): string;
}

/** Version 1 PUT: the caller's address keeps V1_KEPT; any other id is a creation. */
class Replace extends Aimed {
  constructor(
    who: Owner,
    through: Style,
    aim: Target,
    pre: Precondition,
    readonly input: AddressInput,
    none: Precondition = "none",
  ) {
    super(who, through, aim, pre, none);
  }
  async act(model: Model, doorway: AddressDoor, what: string) {
    const { id, entry, ifMatch, ifNoneMatch } = this.aimAt(model);
    const outcome = await doorway.replace(id, this.input, ifMatch, ifNoneMatch);
    const input = trimmed(this.input);
    if (failedCondition(outcome, entry, ifMatch, ifNoneMatch, `${what} (id ${id})`)) return;
    const { created, ...stored } = ok(outcome, what);
    flag(created, !entry, `${what}: created`);
    if (entry) {
      const kept = Object.fromEntries(V1_KEPT.map((name) => [name, entry.address[name]]));
      assert.deepEqual(stored.address, { ...input, ...kept, id }, what);
    } else {
      noteFreshId(model, stored.address.id, what);
      assert.deepEqual(stored.address, { ...input, id: stored.address.id }, what);
    }
    noteWrite(model, this.who, stored, what);
  }
  name = () => `replace with ${JSON.stringify(this.input)}`;
}

class Update extends Aimed {
  constructor(
    who: Owner,
    through: Style,
    aim: Target,
    pre: Precondition,
    readonly patch: Patch,
    none: Precondition = "none",
  ) {
    super(who, through, aim, pre, none);
  }
  async act(model: Model, doorway: AddressDoor, what: string) {
    const { id, entry, ifMatch, ifNoneMatch } = this.aimAt(model);
    const outcome = await doorway.update(id, this.patch, ifMatch, ifNoneMatch);
    if (!entry) return refused(outcome, "address-not-found", `${what} (id ${id})`);
    if (failedCondition(outcome, entry, ifMatch, ifNoneMatch, what)) return;
    const stored = ok(outcome, what);
    const expected = patched(entry.address, this.patch);
    assert.deepEqual(stored.address, expected, what);
    // A patch that changes nothing writes nothing: the etag stays.
    if (sameAddress(expected, entry.address)) assert.equal(stored.etag, entry.etag, what);
    else noteWrite(model, this.who, stored, what);
  }
  name = () => `update with ${JSON.stringify(this.patch)}`;
}

class Delete extends Aimed {
  async act(model: Model, doorway: AddressDoor, what: string) {
    const { id, entry, ifMatch, ifNoneMatch } = this.aimAt(model);
    const outcome = await doorway.remove(id, ifMatch, ifNoneMatch);
    if (!entry) return refused(outcome, "address-not-found", `${what} (id ${id})`);
    if (failedCondition(outcome, entry, ifMatch, ifNoneMatch, what)) return;
    ok(outcome, what);
    model.books[this.who].delete(id);
  }
  name = () => "delete";
}

/**
 * Version 2 PUT (REST only): the caller's address replaced whole; an id allocated once (another
 * owner's, or deleted) refused alike; a new id created there. New ids are above every id handed
 * out and every block of ids POST may have reserved (MAX_BLOCK), within what v2 may jump to.
 */
class PutV2 extends Step {
  constructor(
    who: Owner,
    readonly aim: "mine" | "theirs" | "gone" | "new",
    readonly index: number,
    readonly input: AddressInput,
    readonly none: Precondition = "none",
  ) {
    super(who, "REST");
  }
  async act(model: Model, _: AddressDoor, what: string, real: Real) {
    const held = new Set([...model.books[0].keys(), ...model.books[1].keys()]);
    const ids = this.aim === "mine"
      ? [...model.books[this.who].keys()]
      : this.aim === "theirs"
      ? [...model.books[1 - this.who as Owner].keys()]
      : this.aim === "gone"
      ? [...model.ids.seen].filter((seen) => !held.has(seen))
      : [];
    const id = ids.length > 0
      ? ids[this.index % ids.length]!
      : model.ids.max + MAX_BLOCK + 1 + this.index;
    const entry = model.books[this.who].get(id);
    const ifNoneMatch = ifMatchOf(entry, this.none);
    const outcome = await restDoor(real.server.httpUrl, real.tokens[this.who]).putV2(
      id,
      this.input,
      ifNoneMatch,
    );
    // If-None-Match first (an existing address of the caller's), then the id rule.
    if (failedCondition(outcome, entry, undefined, ifNoneMatch, what)) return;
    if (ids.length > 0 && this.aim !== "mine") {
      return refused(outcome, "id-taken", `${what} (id ${id})`);
    }
    const { created, ...stored } = ok(outcome, `${what} (id ${id})`);
    assert.equal(created, ids.length === 0, `${what}: created`);
    assert.deepEqual(stored.address, { ...trimmed(this.input), id }, what);
    if (created) noteId(model, id);
    noteWrite(model, this.who, stored, what);
  }
  describe = () =>
    `putV2(${this.aim} ${this.index}, ${JSON.stringify(this.input)}, If-None-Match ${this.none})`;
}

/**
 * A page token where it does not belong: a token of the owner's listing (a page of `k` through
 * `from`) used by the other owner, or edited in one character, through `through`, is
 * `invalid-parameter` in every style; the owner's own resumes after its page, with any size.
 */
class Token extends Step {
  override readonly writes = false;
  constructor(
    who: Owner,
    through: Style,
    readonly from: Style,
    readonly index: number,
    readonly use: "other owner" | "edited" | "own",
    readonly at: number,
  ) {
    super(who, through);
  }
  async act(model: Model, _: AddressDoor, what: string, real: Real) {
    const mine = sorted(model, this.who);
    if (mine.length < 2) return;
    const k = 1 + this.index % (mine.length - 1);
    const first = ok(await door(real, this.who, this.from).page(k), `${what}: first page`);
    const token = first.next;
    assert.ok(token !== null, `${what}: a page of ${k} of ${mine.length} has a next token`);
    if (this.use === "other owner") {
      const outcome = await door(real, 1 - this.who as Owner, this.through).page(3, token);
      return refused(outcome, "invalid-parameter", `${what}: the other owner's page`);
    }
    if (this.use === "edited") {
      const i = this.at % token.length;
      const edited = token.slice(0, i) + (token[i] === "A" ? "B" : "A") + token.slice(i + 1);
      const outcome = await door(real, this.who, this.through).page(3, edited);
      return refused(outcome, "invalid-parameter", `${what}: ${edited}`);
    }
    const page = ok(await door(real, this.who, this.through).page(3, token), what);
    const ids = page.items.map((a) => a.id);
    assert.deepEqual(ids, mine.slice(k, k + 3).map((a) => a.id), what);
  }
  describe = () =>
    `token(page of ${this.index} via ${this.from}, ${this.use}${
      this.use === "edited" ? ` at ${this.at}` : ""
    })`;
}

class Bad extends Step {
  constructor(who: Owner, through: Style, readonly fault: Fault) {
    super(who, through);
  }
  async act(model: Model, doorway: AddressDoor, what: string) {
    const f = this.fault;
    switch (f.op) {
      case "create":
        return refused(await doorway.create(f.input, f.key), "invalid-field", what, f.problems);
      case "create-key":
        return refused(await doorway.create(f.input, f.key), "invalid-parameter", what);
      case "get":
        return refused(await doorway.get(f.id), "invalid-parameter", what);
      case "page":
        return refused(await doorway.page(f.size, f.cursor), "invalid-parameter", what);
    }
    const resolved = resolve(model, this.who, f.aim);
    const id = f.id ?? resolved.id;
    const ifMatch = f.etag ? BAD_ETAG : undefined;
    const outcome = f.op === "remove"
      ? await doorway.remove(id, ifMatch)
      : f.op === "replace"
      ? await doorway.replace(id, (f.body?.value ?? EXAMPLE_INPUT) as AddressInput, ifMatch)
      : await doorway.update(id, f.body?.value ?? { city: "Paris" }, ifMatch);
    // REST checks the path, then the headers, then the body: the first wrong part answers.
    if (f.id !== undefined || f.etag) refused(outcome, "invalid-parameter", what);
    else refused(outcome, "invalid-field", what, f.body!.problems);
  }
  describe = () => `bad(${JSON.stringify(this.fault).slice(0, 400)})`;
}

class Restart implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(model: Model, real: Real) {
    await real.server.close();
    real.server = await startTestServer(real.env);
    real.transports.clear();
    await compare(model, real, this.toString());
  }
  toString = () => "restart";
}

/** The styles a subscriber reads the feed through (REST, gRPC, gRPC-Web, GraphQL), in turn. */
const WATCH_STYLES: ((real: Real, token: string) => WatchDoor)[] = [
  (real, token) => sseDoor(real.server.httpUrl, token),
  (real, token) => rpcWatchDoor("gRPC", rpcTransport(real.server, "gRPC"), token),
  (real, token) => rpcWatchDoor("gRPC-Web", grpcWebTransport(real.server.httpUrl, "1.1"), token),
  (real, token) => graphqlWatchDoor(real.server.httpUrl, token),
];

/**
 * An owner's subscriber, open from the start of a sequence: it keeps every change the feed
 * delivers, and after a restart resumes on the new server from the last token it received. At the
 * end, replaying its changes must give exactly the owner's stored addresses, with their etags.
 */
class Subscriber {
  events: ReceivedEvent[] = [];
  token: string | undefined;
  watch: Watch | undefined;
  constructor(readonly open: (real: Real) => WatchDoor) {}

  async start(real: Real) {
    const outcome = await this.open(real).open(this.token);
    if (!outcome.ok) throw new Error(`subscriber refused: ${outcome.code}`);
    this.watch = outcome.value;
    this.token ??= outcome.value.opened;
  }

  /**
   * Takes what is delivered, resuming on the running server after a restart, until `done` says
   * it has what it expects (then a moment more, for anything extra), or the feed stays quiet.
   */
  async catchUp(real: Real, done: () => boolean) {
    for (let quiet = done() ? 50 : 2000;; quiet = done() ? 50 : 2000) {
      const event = await this.watch!.next(quiet);
      if (event !== undefined) {
        this.events.push(event);
        this.token = event.token;
        continue;
      }
      if (!this.watch!.ended) return;
      // The server it read from was restarted: resume on the one running now.
      await this.start(real);
    }
  }

  /** The addresses the changes leave, by ascending id, each with its etag. */
  replayed(): (Address & { etag: string })[] {
    const book = new Map<number, Address & { etag: string }>();
    for (const e of this.events) {
      if (e.type === "deleted") book.delete(e.id);
      else book.set(e.id, { ...e.address!, etag: e.etag! });
    }
    return [...book.values()].sort((a, b) => a.id - b.id);
  }
}

/**
 * A patch of some fields of a valid address (none: a patch that changes nothing), and `null` on
 * some optional fields (removing them).
 */
const patch: fc.Arbitrary<Patch> = fc.tuple(
  validAddress,
  fc.nat(2 ** ADDRESS_FIELD_NAMES.length - 1),
  fc.subarray([...OPTIONAL_FIELD_NAMES]),
).map(([input, mask, removed]) => ({
  ...Object.fromEntries(Object.entries(input).filter((_, i) => (mask >> i) & 1)),
  ...Object.fromEntries(removed.map((name) => [name, null])),
}));

/**
 * `null` on an optional field of a create or replace means absent in every style (proto3 JSON
 * reads it so, and gRPC's binary cannot say it: its door leaves the field out). Sent only while
 * the table's input schema takes it: a schema that refuses it leaves REST and GraphQL refusing
 * what Connect JSON takes, which no one model can expect.
 */
const NULL_IS_ABSENT = OPTIONAL_FIELD_NAMES.length > 0 &&
  AddressInputSchema.safeParse({ ...EXAMPLE_INPUT, [OPTIONAL_FIELD_NAMES[0]!]: null }).success;

/** A valid address to create or replace, with `null` on some optional fields when it means absent. */
const input: fc.Arbitrary<AddressInput> = NULL_IS_ABSENT
  ? fc.tuple(validAddress, fc.subarray([...OPTIONAL_FIELD_NAMES])).map(([address, nulls]) => ({
    ...address,
    ...Object.fromEntries(nulls.map((name) => [name, null])),
  }))
  : validAddress;

/** If-None-Match is REST's alone: through another style, none. */
function restOnly(through: Style, none: Precondition): Precondition {
  return through === "REST" ? none : "none";
}

/** The commands, weighted: a restart (a new server process and gRPC child) costs most. */
const command = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.tuple(owner, style, input).map(([o, s, a]) => new Create(o, s, a)),
  },
  {
    weight: 4,
    arbitrary: fc.tuple(owner, style, fc.constantFrom("k1", "k2", "k3"), fc.boolean(), validAddress)
      .map(([o, s, key, same, a]) => new Create(o, s, same ? named("Idem") : a, key)),
  },
  { weight: 6, arbitrary: fc.tuple(owner, style, target).map(([o, s, t]) => new Get(o, s, t)) },
  {
    weight: 4,
    arbitrary: fc.tuple(
      owner,
      fc.integer({ min: 1, max: 7 }),
      fc.array(style, { minLength: 1, maxLength: 3 }),
    )
      .map(([o, size, styles]) => new List(o, size, styles)),
  },
  {
    weight: 6,
    arbitrary: fc.tuple(owner, style, target, input, precondition, precondition)
      .map(([o, s, t, a, p, n]) => new Replace(o, s, t, p, a, restOnly(s, n))),
  },
  {
    weight: 6,
    arbitrary: fc.tuple(owner, style, target, patch, precondition, precondition)
      .map(([o, s, t, p, pre, n]) => new Update(o, s, t, pre, p, restOnly(s, n))),
  },
  {
    weight: 4,
    arbitrary: fc.tuple(owner, style, target, precondition, precondition).map(([o, s, t, p, n]) =>
      new Delete(o, s, t, p, restOnly(s, n))
    ),
  },
  {
    weight: 3,
    arbitrary: fc.tuple(
      owner,
      style,
      style,
      fc.nat(40),
      fc.constantFrom("other owner" as const, "edited" as const, "own" as const),
      fc.nat(21),
    ).map(([o, s, from, index, use, at]) => new Token(o, s, from, index, use, at)),
  },
  {
    weight: 2,
    arbitrary: fc.tuple(
      owner,
      fc.constantFrom("mine" as const, "theirs" as const, "gone" as const, "new" as const),
      fc.nat(9),
      validAddress,
      precondition,
    )
      .map(([o, aim, index, a, n]) => new PutV2(o, aim, index, a, n)),
  },
  { weight: 6, arbitrary: fc.tuple(owner, style, fault).map(([o, s, f]) => new Bad(o, s, f)) },
  { weight: 1, arbitrary: fc.constant(new Restart()) },
);

Deno.test("address book model: random operations through REST, GraphQL and gRPC by two owners match one model", async () => {
  const numRuns = Math.max(1, Math.round(25 * FUZZ_SCALE));
  const dir = await Deno.makeTempDir({ prefix: "books-model-" });
  const env = { KV_PATH: `${dir}/kv.sqlite3`, AUTH_JWT_SECRET: SECRET };
  const real: Real = {
    server: await startTestServer(env),
    env,
    tokens: ["", ""],
    transports: new Map(),
  };
  // Ids are global in the store: every sequence on this server adds to the ones seen.
  const ids: Ids = { seen: new Set(), max: 0 };
  const scope = "addresses:read addresses:write";
  let count = 0;
  let steps = 0;
  const property = fc.asyncProperty(
    fc.commands([command], { maxCommands: 40, size: "+1" }),
    async (cmds) => {
      count++;
      // Two owners of their own: every sequence starts with two empty address books.
      real.tokens = [
        await hsToken({ sub: `alice-${count}`, scope }),
        await hsToken({ sub: `bob-${count}`, scope }),
      ];
      const watchStyle = WATCH_STYLES[count % WATCH_STYLES.length]!;
      const subscribers = real.tokens.map((t) => new Subscriber((r) => watchStyle(r, t)));
      for (const s of subscribers) await s.start(real);
      let model: Model | undefined;
      await fc.asyncModelRun(() => ({ model: model = newModel(ids), real }), cmds);
      steps += [...cmds].length;
      // Each owner's feed, replayed, is what the owner has stored: nothing lost, nothing twice.
      for (const [who, subscriber] of subscribers.entries()) {
        const stored = [...model!.books[who as Owner].values()]
          .map((e) => ({ ...e.address, etag: e.etag }))
          .sort((a, b) => a.id - b.id);
        const same = () => JSON.stringify(subscriber.replayed()) === JSON.stringify(stored);
        await subscriber.catchUp(real, same);
        await subscriber.watch!.close();
        assert.deepEqual(subscriber.replayed(), stored, `${OWNER_NAMES[who]}'s feed, replayed`);
      }
    },
  );
  const path = Deno.env.get("FUZZ_PATH");
  try {
    await fc.assert(property, {
      seed: FUZZ_SEED,
      numRuns,
      // Shrinking replays sequences against the server; bounded so a failure is reported soon.
      interruptAfterTimeLimit: 300_000 * FUZZ_SCALE,
      markInterruptAsFailure: false,
      ...(path ? { path } : {}),
    });
  } catch (error) {
    console.error(`\nMODEL FAILURE: replay with FUZZ_SEED=${FUZZ_SEED} (see the path above)\n`);
    throw error;
  } finally {
    console.log(`fuzz "address model": ${count} sequences, ${steps} commands, seed ${FUZZ_SEED}`);
    await real.server.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
