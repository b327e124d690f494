/**
 * GraphQL with authentication on: what an operation needs follows from its selected root fields
 * (fragments included), decided with the gate's own rule before it runs: the books are public
 * unless AUTH_BOOKS=required, the address queries need addresses:read, the mutations
 * addresses:write, and the refusals are the gate's (status, code, challenge). Ownership holds
 * across GraphQL and REST: another owner's address is not found.
 */
import assert from "node:assert/strict";
import {
  AddressDocument,
  AddressesDocument,
  CreateAddressDocument,
  DeleteAddressDocument,
  UpdateAddressDocument,
} from "../../clients/gen/graphql.ts";
import { createGraphqlClient } from "../../clients/graphql_client.ts";
import { EXAMPLE_INPUT } from "../../lib/address.ts";
import {
  addressBook,
  answerOf,
  bearer,
  type Fields,
  graphql,
  idempotencyKey,
  taggedInput,
} from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const CHALLENGE = 'Bearer realm="books"';
const ADDRESSES = "{ addresses { edges { cursor } } }";

/** POST /graphql, read whole; the answer must be a refusal or data, never both. */
async function post(base: string, body: unknown, headers: Fields = {}) {
  return await answerOf(await graphql(base, body, headers));
}

/** Asserts the gate's refusal rendered by GraphQL: status, challenge, code, nothing run. */
function assertRefused(
  reply: Awaited<ReturnType<typeof post>>,
  status: 401 | 403,
  scope?: string,
): void {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.equal(reply.body.data, undefined);
  assert.equal(reply.body.errors[0].extensions.code, status === 401 ? "unauthorized" : "forbidden");
  assert.equal(
    reply.headers.get("www-authenticate"),
    status === 401 ? CHALLENGE : `Bearer error="insufficient_scope", scope="${scope}"`,
  );
}

Deno.test("GraphQL with authentication: each root field needs its scope", async (t) => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET, GRPC_PORT: "off" });
  const base = server.httpUrl;
  const reader = await hsToken({ sub: "reader", scope: "addresses:read" });
  const writer = await hsToken({ sub: "writer", scope: "addresses:read addresses:write" });
  try {
    await t.step("no token: addresses 401 with the challenge; books 200", async () => {
      assertRefused(await post(base, { query: ADDRESSES }), 401);
      assertRefused(await post(base, { query: "{ address(id: 1) { id } }" }), 401);
      const books = await post(base, { query: "{ books { title } }" });
      assert.equal(books.status, 200);
      assert.ok(books.body.data.books.length > 0);
      // A document that mixes both needs what each of its fields needs.
      assertRefused(await post(base, { query: `{ books { title } ${ADDRESSES.slice(1)}` }), 401);
    });

    await t.step("root fields reached through fragments count", async () => {
      const spread = `{ ...F } fragment F on Query { books { title } ${ADDRESSES.slice(1)}`;
      assertRefused(await post(base, { query: spread }), 401);
      const inline = "{ ... on Query { ... on Query { address(id: 1) { id } } } }";
      assertRefused(await post(base, { query: inline }), 401);
      // @skip does not make a field free: what may run is decided before it runs.
      const skipped = `{ books { title } addresses @skip(if: true) { edges { cursor } } }`;
      assertRefused(await post(base, { query: skipped }), 401);
    });

    await t.step("a read-only token: queries 200, each mutation 403", async () => {
      const api = createGraphqlClient(base, { token: reader });
      assert.equal((await api.request(AddressesDocument, {})).status, 200);
      const create = await post(
        base,
        {
          query: "mutation ($input: AddressInput!) { createAddress(input: $input) { id } }",
          variables: { input: EXAMPLE_INPUT },
        },
        bearer(reader),
      );
      assertRefused(create, 403, "addresses:write");
      for (
        const mutation of [
          "mutation { deleteAddress(id: 1) }",
          "mutation { updateAddress(id: 1, patch: {}) { id } }",
        ]
      ) {
        assertRefused(
          await post(base, { query: mutation }, bearer(reader)),
          403,
          "addresses:write",
        );
      }
      assert.deepEqual(await addressBook(base, bearer(reader)).listAll(), []);
    });

    await t.step("the operation that runs decides, not the others in the document", async () => {
      const document = "query B { books { title } } mutation M { deleteAddress(id: 1) }";
      assertRefused(
        await post(base, { query: document, operationName: "M" }, bearer(reader)),
        403,
        "addresses:write",
      );
      assertRefused(await post(base, { query: document, operationName: "M" }), 401);
      const books = await post(base, { query: document, operationName: "B" });
      assert.equal(books.status, 200);
    });

    await t.step("invalid documents are answered as such whoever asks", async () => {
      const reply = await post(base, { query: "{ addresses { nope } }" });
      assert.equal(reply.status, 200);
      assert.equal(reply.body.errors[0].extensions.code, "invalid-parameter");
    });

    await t.step("ownership: Alice's address is not found by Bob, in either style", async () => {
      const alice = await hsToken({ sub: "alice", scope: "addresses:read addresses:write" });
      const bob = await hsToken({ sub: "bob", scope: "addresses:read addresses:write" });
      const asAlice = createGraphqlClient(base, { token: alice });
      const asBob = createGraphqlClient(base, { token: () => bob });
      const input = taggedInput("alice");
      const created = await asAlice.request(CreateAddressDocument, {
        input,
        idempotencyKey: "shared-key",
      });
      const { id } = created.data!.createAddress!;
      const restBob = addressBook(base, bearer(bob));
      const viaRest = await restBob.get(id);
      assert.equal(viaRest.status, 404);
      assert.equal((await viaRest.json()).errors[0].error, "address-not-found");
      assert.deepEqual((await asBob.request(AddressDocument, { id })).data, { address: null });
      assert.deepEqual((await asBob.request(AddressesDocument, {})).data!.addresses.edges, []);
      const update = await asBob.request(UpdateAddressDocument, { id, patch: { city: "Bob" } });
      assert.equal(update.errors![0]!.extensions.code, "address-not-found");
      const remove = await asBob.request(DeleteAddressDocument, { id });
      assert.equal(remove.errors![0]!.extensions.code, "address-not-found");
      // Bob's Idempotency-Key of the same name is his own.
      const bobs = await answerOf(await restBob.create(input, idempotencyKey("shared-key")));
      assert.equal(bobs.status, 201);
      assert.notEqual(String(bobs.body.id), id);
      assert.equal(bobs.headers.get("idempotent-replayed"), null);
      // Alice still has hers, unchanged, over REST too.
      const own = await answerOf(await addressBook(base, bearer(alice)).get(id));
      assert.deepEqual(own.body, { id: Number(id), ...input });
      assert.equal(own.headers.get("etag"), created.data!.createAddress!.etag);
    });

    await t.step("a writer's mutation runs; the schema stays public", async () => {
      const api = createGraphqlClient(base, { token: writer });
      const created = await api.request(CreateAddressDocument, { input: EXAMPLE_INPUT });
      assert.equal(created.status, 200);
      assert.equal(created.errors, undefined);
      const sdl = await fetch(`${base}/graphql/schema.graphql`);
      assert.equal(sdl.status, 200);
      assert.match(await sdl.text(), /type Mutation/);
    });
  } finally {
    await server.close();
  }
});

Deno.test("GraphQL with AUTH_BOOKS=required: books and meta fields need books:read, addresses do not", async (t) => {
  const server = await startTestServer({
    AUTH_JWT_SECRET: SECRET,
    AUTH_BOOKS: "required",
    GRPC_PORT: "off",
  });
  const base = server.httpUrl;
  const addressesOnly = await hsToken({ sub: "a", scope: "addresses:read addresses:write" });
  const booksOnly = await hsToken({ sub: "b", scope: "books:read" });
  try {
    await t.step("no token: refused before the body is read", async () => {
      assertRefused(await post(base, "{not json"), 401);
      assertRefused(await post(base, { query: "{ __typename }" }), 401);
    });

    await t.step("an addresses-only token: address fields 200, books 403", async () => {
      const api = createGraphqlClient(base, { token: addressesOnly });
      const page = await api.request(AddressesDocument, { first: 1 });
      assert.equal(page.status, 200);
      assert.equal(page.errors, undefined);
      // Cached for a books reader first (the same body again is answered from the cache by its
      // text, the same answer): the cached answer is not given to this caller.
      const first = await post(base, { query: "{ books { title } }" }, bearer(booksOnly));
      assert.equal(first.status, 200);
      const again = await post(base, { query: "{ books { title } }" }, bearer(booksOnly));
      assert.deepEqual([again.status, again.body], [200, first.body]);
      assertRefused(
        await post(base, { query: "{ books { title } }" }, bearer(addressesOnly)),
        403,
        "books:read",
      );
      assertRefused(
        await post(
          base,
          { query: `{ books { title } ${ADDRESSES.slice(1)}` },
          bearer(addressesOnly),
        ),
        403,
        "books:read",
      );
      assertRefused(
        await post(base, { query: "{ __typename }" }, bearer(addressesOnly)),
        403,
        "books:read",
      );
    });

    await t.step("a books-only token: books 200, addresses 403", async () => {
      assert.equal((await post(base, { query: "{ __typename }" }, bearer(booksOnly))).status, 200);
      assertRefused(
        await post(base, { query: ADDRESSES }, bearer(booksOnly)),
        403,
        "addresses:read",
      );
    });

    await t.step("the SDL is public like /openapi.json", async () => {
      const sdl = await fetch(`${base}/graphql/schema.graphql`);
      assert.equal(sdl.status, 200);
      await sdl.body?.cancel();
    });
  } finally {
    await server.close();
  }
});
