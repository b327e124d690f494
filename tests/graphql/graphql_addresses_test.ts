/**
 * The address book over GraphQL, over a socket with the typed documents (clients/gen/graphql.ts)
 * and `fetch`: every query and mutation, the same answers and error codes as REST for the same
 * calls, one store (an etag read over one style is the other's If-Match; an Idempotency-Key is
 * one key whichever style sent it), paging that walks what REST lists, and results that are
 * never cached (they are per caller and per moment).
 */
import assert from "node:assert/strict";
import {
  AddressDocument,
  AddressesDocument,
  type AddressFieldsFragment,
  CreateAddressDocument,
  DeleteAddressDocument,
  ReplaceAddressDocument,
  UpdateAddressDocument,
} from "../../clients/gen/graphql.ts";
import {
  createGraphqlClient,
  type GraphqlAnswer,
  type GraphqlClient,
} from "../../clients/graphql_client.ts";
import {
  ADDRESS_FIELD_NAMES,
  EXAMPLE_INPUT,
  OPTIONAL_FIELD_NAMES,
  REQUIRED_FIELD_NAMES,
  V1_KEPT,
} from "../../lib/address.ts";
import { ROOT_ACCESS } from "../../graphql/schema.ts";
import { createSchema } from "../../graphql/schema.ts";
import {
  type Address,
  type AddressBook,
  addressBook,
  answerOf,
  graphql,
  idempotencyKey,
  taggedInput,
} from "../support/requests.ts";
import { graphqlDoor, restDoor, rpcDoor, rpcTransport } from "../support/address_doors.ts";
import { startTestServer } from "../support/server.ts";

/**
 * An address as REST answers it, from GraphQL's: the id a string there, the etag added, an
 * absent optional field null.
 */
function asRest(node: AddressFieldsFragment): Address {
  const { id, etag: _, ...fields } = node;
  const present = Object.entries(fields).filter(([, value]) => value !== null);
  return { id: Number(id), ...Object.fromEntries(present) } as Address;
}

/** The codes of a GraphQL answer's errors (none: []). */
function codes(answer: GraphqlAnswer<unknown>): string[] {
  return (answer.errors ?? []).map((e) => e.extensions.code);
}

/**
 * Asserts one error with `code` on the failed root field `field` (a mutation), whose result is
 * null; the data around it stays.
 */
function assertFieldError(answer: GraphqlAnswer<unknown>, code: string, field: string): void {
  assert.equal(answer.status, 200, JSON.stringify(answer));
  assert.deepEqual(codes(answer), [code], JSON.stringify(answer.errors));
  assert.deepEqual(answer.errors![0]!.path, [field]);
  assert.deepEqual(answer.data, { [field]: null });
}

Deno.test("every root field declares what it needs (deny by default otherwise)", () => {
  const schema = createSchema();
  for (const root of [schema.getQueryType()!, schema.getMutationType()!]) {
    for (const name of Object.keys(root.getFields())) {
      const access = ROOT_ACCESS.get(name);
      assert.ok(access !== undefined, `${root.name}.${name} declares no access`);
      const expected = root.name === "Mutation"
        ? "addresses:write"
        : name === "books"
        ? "books:read"
        : "addresses:read";
      assert.equal(access, expected, name);
    }
  }
});

Deno.test("the address book over GraphQL answers as REST does", async (t) => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  const base = server.httpUrl;
  const api: GraphqlClient = createGraphqlClient(base);
  const rest: AddressBook = addressBook(base);
  try {
    let created!: AddressFieldsFragment;

    await t.step("createAddress: stored as REST stores it, its etag REST's ETag", async () => {
      const answer = await api.request(CreateAddressDocument, {
        input: { ...EXAMPLE_INPUT, city: "  London  " },
      });
      assert.equal(answer.status, 200);
      assert.equal(answer.errors, undefined);
      created = answer.data!.createAddress!;
      assert.match(created.id, /^[1-9][0-9]*$/);
      const read = await answerOf(await rest.get(created.id));
      assert.equal(read.status, 200);
      // Trimmed like a REST body.
      assert.deepEqual(read.body, { id: Number(created.id), ...EXAMPLE_INPUT, city: "London" });
      assert.deepEqual(asRest(created), read.body);
      assert.equal(created.etag, read.headers.get("etag"));
    });

    await t.step("address: the stored address; null when absent", async () => {
      const found = await api.request(AddressDocument, { id: created.id });
      assert.deepEqual(found.data, { address: created });
      // ID takes an integer as well.
      const byNumber = await api.request(AddressDocument, { id: Number(created.id) });
      assert.deepEqual(byNumber.data, { address: created });
      const absent = await api.request(AddressDocument, { id: "999999" });
      assert.equal(absent.status, 200);
      assert.deepEqual(absent, { ...absent, data: { address: null } });
      assert.equal(absent.errors, undefined);
    });

    await t.step("address: an id that is not a positive integer is invalid-parameter", async () => {
      for (const id of ["0", "-1", "abc", "1.5", "9007199254740992", "01"]) {
        const answer = await api.request(AddressDocument, { id });
        assert.deepEqual(codes(answer), ["invalid-parameter"], id);
        assert.deepEqual(answer.data, { address: null }, id);
        const viaRest = await rest.get(id);
        await viaRest.body?.cancel();
        assert.equal(viaRest.status, 400, id);
      }
    });

    await t.step("replaceAddress: version 1 PUT (the name kept), ifMatch as If-Match", async () => {
      const input = taggedInput("r");
      const stale = created.etag;
      const replaced = await api.request(ReplaceAddressDocument, {
        id: created.id,
        input,
        ifMatch: created.etag,
      });
      const after = replaced.data!.replaceAddress!;
      const expected = { ...input, ...Object.fromEntries(V1_KEPT.map((n) => [n, created[n]])) };
      assert.deepEqual(asRest(after), { id: Number(created.id), ...expected });
      assert.notEqual(after.etag, stale);
      // The GraphQL etag is REST's If-Match.
      const viaRest = await rest.put(created.id, input, { "if-match": stale });
      assert.equal(viaRest.status, 412);
      assert.equal((await viaRest.json()).errors[0].error, "precondition-failed");
      const refused = await api.request(ReplaceAddressDocument, {
        id: created.id,
        input: EXAMPLE_INPUT,
        ifMatch: stale,
      });
      assertFieldError(refused, "precondition-failed", "replaceAddress");
      created = after;
    });

    await t.step("replaceAddress of an absent id: created with a generated id", async () => {
      const answer = await api.request(ReplaceAddressDocument, {
        id: "888888",
        input: EXAMPLE_INPUT,
      });
      const stored = answer.data!.replaceAddress!;
      assert.notEqual(stored.id, "888888");
      assert.deepEqual(asRest(stored), (await answerOf(await rest.get(stored.id))).body);
      // With ifMatch, an absent id is a failed precondition (REST alike), nothing stored.
      const conditional = await api.request(ReplaceAddressDocument, {
        id: "888888",
        input: EXAMPLE_INPUT,
        ifMatch: "*",
      });
      assertFieldError(conditional, "precondition-failed", "replaceAddress");
      await api.request(DeleteAddressDocument, { id: stored.id });
    });

    await t.step("updateAddress: a merge patch; REST's ETag is GraphQL's ifMatch", async () => {
      const read = await rest.get(created.id);
      const etag = read.headers.get("etag")!;
      await read.body?.cancel();
      const [first] = ADDRESS_FIELD_NAMES;
      const patched = await api.request(UpdateAddressDocument, {
        id: created.id,
        patch: { [first!]: "  Patched  " },
        ifMatch: etag,
      });
      const after = patched.data!.updateAddress!;
      assert.deepEqual(asRest(after), { ...asRest(created), [first!]: "Patched" });
      // Nothing changes: no write, the etag stays (REST alike).
      const same = await api.request(UpdateAddressDocument, {
        id: created.id,
        patch: {},
        ifMatch: after.etag,
      });
      assert.equal(same.data!.updateAddress!.etag, after.etag);
      // A list of tags and `*` are If-Match's syntax too; a weak tag never matches.
      const listed = await api.request(UpdateAddressDocument, {
        id: created.id,
        patch: {},
        ifMatch: `"nope", ${after.etag}`,
      });
      assert.equal(listed.errors, undefined);
      const weak = await api.request(UpdateAddressDocument, {
        id: created.id,
        patch: {},
        ifMatch: `W/${after.etag}`,
      });
      assertFieldError(weak, "precondition-failed", "updateAddress");
      const stale = await api.request(UpdateAddressDocument, {
        id: created.id,
        patch: { [first!]: "Again" },
        ifMatch: etag,
      });
      assertFieldError(stale, "precondition-failed", "updateAddress");
      const absent = await api.request(UpdateAddressDocument, { id: "999999", patch: {} });
      assertFieldError(absent, "address-not-found", "updateAddress");
      created = after;
    });

    await t.step(
      "updateAddress: null on a required field is invalid-field, stored unchanged",
      async () => {
        for (const name of REQUIRED_FIELD_NAMES) {
          const answer = await api.request(UpdateAddressDocument, {
            id: created.id,
            patch: { [name]: null },
          });
          assert.deepEqual(codes(answer), ["invalid-field"], name);
          assert.equal(answer.errors![0]!.extensions.field, name);
          const viaRest = await rest.patch(created.id, { [name]: null });
          const restError = (await viaRest.json()).errors[0];
          assert.equal(viaRest.status, 400);
          assert.equal(restError.error, "invalid-field");
          assert.equal(answer.errors![0]!.message, restError.detail);
        }
        assert.deepEqual(
          (await answerOf(await rest.get(created.id))).body,
          asRest(created),
        );
      },
    );

    await t.step("updateAddress: null removes an optional field, as over REST", async () => {
      for (const name of OPTIONAL_FIELD_NAMES) {
        const answer = await api.request(UpdateAddressDocument, {
          id: created.id,
          patch: { [name]: null },
        });
        assert.equal(answer.data!.updateAddress![name], null, name);
        const stored = (await answerOf(await rest.get(created.id))).body;
        assert.ok(!(name in stored), name);
        created = answer.data!.updateAddress!;
      }
    });

    await t.step(
      "bad inputs: one error per problem, REST's codes and details, nothing stored",
      async () => {
        const before = await rest.listAll();
        const bad: Record<string, unknown>[] = [
          {},
          { ...EXAMPLE_INPUT, [ADDRESS_FIELD_NAMES[0]!]: "   " },
          { ...EXAMPLE_INPUT, [ADDRESS_FIELD_NAMES[0]!]: 5 },
          { ...EXAMPLE_INPUT, [ADDRESS_FIELD_NAMES[1]!]: null },
          { ...EXAMPLE_INPUT, postalCode: "W1J 7NT!" },
          Object.fromEntries(ADDRESS_FIELD_NAMES.map((n) => [n, "x".repeat(300)])),
        ];
        for (const input of bad) {
          const where = JSON.stringify(input).slice(0, 80);
          // Sent as JSON, so the variables are what a client with no types would send.
          const answer = await answerOf(
            await graphql(base, {
              query: "mutation ($input: AddressInput!) { createAddress(input: $input) { id } }",
              variables: { input },
            }),
          );
          const viaRest = await answerOf(await rest.create(input));
          assert.equal(viaRest.status, 400, where);
          const restProblems = viaRest.body.errors.map((e: { error: string; detail: string }) => [
            e.error,
            e.detail,
          ]);
          const graphqlProblems = answer.body.errors.map((
            e: { message: string; extensions: { code: string } },
          ) => [e.extensions.code, e.message]);
          assert.deepEqual(graphqlProblems, restProblems, where);
          for (const error of answer.body.errors) {
            assert.ok(ADDRESS_FIELD_NAMES.includes(error.extensions.field), where);
          }
          // Nothing ran: GraphQL-over-HTTP's answer to variables the operation cannot take.
          assert.equal(answer.status, 200, where);
          assert.equal(answer.body.data, undefined, where);
        }
        // The same problems in a document's literal input: the mutation field's errors.
        const literal = await answerOf(
          await graphql(base, {
            query: `mutation { createAddress(input: { ${
              ADDRESS_FIELD_NAMES.map((n) => `${n}: " "`).join(", ")
            } }) { id } }`,
          }),
        );
        assert.deepEqual(
          literal.body.errors.map((e: { extensions: { field: string } }) => e.extensions.field),
          ADDRESS_FIELD_NAMES,
        );
        assert.deepEqual(literal.body.data, { createAddress: null });
        assert.deepEqual(await rest.listAll(), before);
      },
    );

    await t.step("createAddress with idempotencyKey: one store of keys with REST", async () => {
      const input = taggedInput("idem");
      const first = await api.request(CreateAddressDocument, { input, idempotencyKey: "k-1" });
      const again = await api.request(CreateAddressDocument, { input, idempotencyKey: "k-1" });
      assert.deepEqual(again.data, first.data);
      // REST's replay of the same key answers the same creation.
      const viaRest = await answerOf(await rest.create(input, idempotencyKey("k-1")));
      assert.equal(viaRest.status, 201);
      assert.equal(viaRest.headers.get("idempotent-replayed"), "true");
      assert.deepEqual(viaRest.body, asRest(first.data!.createAddress!));
      const reused = await api.request(CreateAddressDocument, {
        input: taggedInput("other"),
        idempotencyKey: "k-1",
      });
      assertFieldError(reused, "idempotency-key-reused", "createAddress");
      for (const key of ["", "x".repeat(256), "with space", "é"]) {
        const answer = await api.request(CreateAddressDocument, { input, idempotencyKey: key });
        assertFieldError(answer, "invalid-parameter", "createAddress");
        const rested = await rest.create(input, idempotencyKey(key)).catch(() => undefined);
        if (rested !== undefined) {
          assert.equal(rested.status, 400, JSON.stringify(key));
          await rested.body?.cancel();
        }
      }
      const mine = (await rest.listAll()).filter((a) => a.name === input.name);
      assert.equal(mine.length, 1);
    });

    await t.step("addresses: pages walk exactly what REST lists, same cursors", async () => {
      for (let i = 0; i < 7; i++) await rest.create(taggedInput(`page ${i}`));
      const listed = await rest.listAll(3);
      const walked: Address[] = [];
      let after: string | null = null;
      for (let pages = 0; pages < 100; pages++) {
        const answer: GraphqlAnswer<unknown> & { data?: { addresses: PageOf } | null } = await api
          .request(AddressesDocument, { first: 3, after });
        const page = answer.data!.addresses;
        assert.ok(page.edges.length <= 3);
        walked.push(...page.edges.map((e) => asRest(e.node)));
        // endCursor resumes after the last edge, and is REST's nextCursor while there is more.
        assert.equal(page.pageInfo.endCursor, page.edges.at(-1)?.cursor ?? null);
        if (page.pageInfo.hasNextPage) {
          const viaRest = await answerOf(
            await fetch(`${base}/addresses?limit=3${after ? `&cursor=${after}` : ""}`),
          );
          assert.equal(viaRest.body.nextCursor, page.pageInfo.endCursor);
        }
        if (!page.pageInfo.hasNextPage) break;
        after = page.pageInfo.endCursor;
      }
      assert.deepEqual(walked, listed);
      // Default page size 50.
      const all = await api.request(AddressesDocument, {});
      assert.equal(all.data!.addresses.edges.length, Math.min(50, listed.length));
    });

    await t.step("addresses: first and after out of bounds are invalid-parameter", async () => {
      for (const first of [0, -1, 501]) {
        const answer = await api.request(AddressesDocument, { first });
        assert.deepEqual(codes(answer), ["invalid-parameter"], String(first));
        assert.equal(answer.data, null);
        const viaRest = await fetch(`${base}/addresses?limit=${first}`);
        assert.equal(viaRest.status, 400);
        await viaRest.body?.cancel();
      }
      for (const after of ["", "nope", "YTE6MA", "x".repeat(300)]) {
        const answer = await api.request(AddressesDocument, { after });
        assert.deepEqual(codes(answer), ["invalid-parameter"], after);
        assert.match(answer.errors![0]!.message, /after/);
      }
    });

    await t.step("deleteAddress: true; then absent for every style", async () => {
      const stale = await api.request(DeleteAddressDocument, {
        id: created.id,
        ifMatch: '"stale"',
      });
      assertFieldError(stale, "precondition-failed", "deleteAddress");
      const deleted = await api.request(DeleteAddressDocument, {
        id: created.id,
        ifMatch: created.etag,
      });
      assert.deepEqual(deleted.data, { deleteAddress: true });
      const again = await api.request(DeleteAddressDocument, { id: created.id });
      assertFieldError(again, "address-not-found", "deleteAddress");
      assert.deepEqual((await api.request(AddressDocument, { id: created.id })).data, {
        address: null,
      });
      const viaRest = await rest.get(created.id);
      assert.equal(viaRest.status, 404);
      await viaRest.body?.cancel();
    });

    await t.step("address results are never cached: each answer reads the store", async () => {
      const query = { query: "{ addresses(first: 50) { edges { node { id } } } }" };
      const count = async () =>
        (await answerOf(await graphql(base, query))).body.data.addresses.edges.length;
      const before = await count();
      assert.equal(await count(), before);
      await rest.create(taggedInput("cache"));
      assert.equal(await count(), before + 1);
      const { id } = (await rest.listAll()).at(-1)!;
      const one = { query: `{ address(id: ${id}) { id } }` };
      assert.deepEqual((await answerOf(await graphql(base, one))).body.data, {
        address: { id: String(id) },
      });
      await rest.delete(id);
      assert.deepEqual((await answerOf(await graphql(base, one))).body.data, { address: null });
    });

    await t.step("mutations go over POST only: GET with a query is 405", async () => {
      const query = "mutation { deleteAddress(id: 1) }";
      const res = await fetch(`${base}/graphql?query=${encodeURIComponent(query)}`);
      assert.equal(res.status, 405);
      assert.equal(res.headers.get("allow"), "GET, HEAD, POST, OPTIONS");
      assert.equal((await res.json()).errors[0].extensions.code, "method-not-allowed");
    });
  } finally {
    await server.close();
  }
});

type Code = { extensions: { code: string } };

type PageOf = {
  edges: { cursor: string; node: AddressFieldsFragment }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
};

Deno.test("one operation reads at most one page of 500, within the default limits", async () => {
  const server = await startTestServer({ GRPC_PORT: "off", MAX_ADDRESSES_PER_OWNER: "1000" });
  const api = createGraphqlClient(server.httpUrl);
  const rest = addressBook(server.httpUrl);
  try {
    for (let i = 0; i < 501; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, 501 - i) }, (_, j) => rest.create(taggedInput(i + j))),
      );
    }
    const first = await api.request(AddressesDocument, { first: 500 });
    assert.equal(first.errors, undefined, JSON.stringify(first.errors));
    assert.equal(first.data!.addresses.edges.length, 500);
    assert.equal(first.data!.addresses.pageInfo.hasNextPage, true);
    const rest1 = await api.request(AddressesDocument, {
      first: 500,
      after: first.data!.addresses.pageInfo.endCursor,
    });
    assert.equal(rest1.data!.addresses.edges.length, 1);
    assert.equal(rest1.data!.addresses.pageInfo.hasNextPage, false);

    // Aliases share the page budget, whether a page size is a variable or a literal.
    const split = async (first: number, literal = false) =>
      answerOf(
        await graphql(server.httpUrl, {
          query: literal
            ? `{ a: addresses(first: ${first}) { edges { cursor } } ` +
              `b: addresses(first: ${first}) { edges { cursor } } }`
            : "query ($n: Int) { a: addresses(first: $n) { edges { cursor } } " +
              "b: addresses(first: $n) { edges { cursor } } }",
          ...(!literal && { variables: { n: first } }),
        }),
      );
    const within = await split(250);
    assert.equal(within.body.data.a.edges.length, 250);
    assert.equal(within.body.data.b.edges.length, 250);
    const over = await split(251);
    assert.equal(over.body.data, undefined);
    assert.deepEqual(over.body.errors.map((e: Code) => e.extensions.code), ["invalid-parameter"]);
    assert.match(over.body.errors[0].message, /at most 500 addresses together/);
    // A literal page size is a variable's: the same budget, and no cost of its own (issue 35).
    const literal = await split(250, true);
    assert.equal(literal.body.data.b.edges.length, 250);
    const literalOver = await split(251, true);
    assert.match(literalOver.body.errors[0].message, /at most 500 addresses together/);
  } finally {
    await server.close();
  }
});

const VALID = { name: "Ada", city: "London", postalCode: "W1J 7NT" };

// Issue 31 (the model test across styles, seed 1503001435): a replace or update whose id or
// If-Match REST refuses, with an address input that is wrong too, was `invalid-field` over
// GraphQL (its input variables were checked before anything else) and `invalid-parameter` over
// REST and gRPC, which read the path and headers before the body.
Deno.test("GraphQL refuses a wrong id or ifMatch before a wrong address input, as REST and gRPC do", async () => {
  const server = await startTestServer();
  const bad = { ...VALID, postalCode: "a!b" };
  const etag = `"${"e".repeat(1000)}"`;
  try {
    const doors = [
      restDoor(server.httpUrl),
      graphqlDoor(server.httpUrl),
      rpcDoor(rpcTransport(server, "gRPC"), "gRPC"),
    ];
    const created = await doors[0]!.create(VALID);
    assert.ok(created.ok);
    const id = created.value.address.id;
    for (const door of doors) {
      const cases = [
        ["replace, id 0", await door.replace(0, bad)],
        ["update, id 0", await door.update(0, { postalCode: "a!b" })],
        ["replace, If-Match too long", await door.replace(id, bad, etag)],
        ["update, If-Match too long", await door.update(id, { city: "" }, etag)],
      ] as const;
      for (const [what, outcome] of cases) {
        assert.ok(!outcome.ok && outcome.code === "invalid-parameter", `${door.style}: ${what}`);
      }
      // Only the input wrong: its own code.
      const input = await door.replace(id, bad);
      assert.ok(!input.ok && input.code === "invalid-field", door.style);
    }
    // A literal id in the document too.
    const literal = await graphql(server.httpUrl, {
      query: "mutation ($input: AddressInput!) { replaceAddress(id: -1, input: $input) { id } }",
      variables: { input: bad },
    });
    assert.equal((await literal.json()).errors[0].extensions.code, "invalid-parameter");
    const stored = await doors[0]!.get(id);
    assert.deepEqual(stored.ok && stored.value.address, { id, ...VALID });
  } finally {
    await server.close();
  }
});
