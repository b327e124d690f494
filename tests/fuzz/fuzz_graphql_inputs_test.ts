/**
 * Property (docs/fuzzing.md): an address input, however broken (members missing, null, of the
 * wrong type, too long, hostile characters), gets the same answer over GraphQL as over REST:
 * stored alike, or refused with the same codes and details, and then nothing is stored. For a
 * create (`createAddress` and POST /addresses) and a merge patch (`updateAddress` and PATCH).
 * Members the address does not have are left out: REST ignores them, GraphQL's input types
 * refuse them (docs/graphql.md).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { ADDRESS_FIELD_NAMES, EXAMPLE_INPUT } from "../../lib/address.ts";
import { fuzz } from "../support/fuzz.ts";
import { mutatedAddress } from "../support/fuzz_http.ts";
import { addressBook, type Answer, answerOf, graphql } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";

const CREATE = "mutation ($input: AddressInput!) { createAddress(input: $input) { id " +
  `${ADDRESS_FIELD_NAMES.join(" ")} } }`;
const UPDATE = "mutation ($id: ID!, $patch: AddressPatch!) { updateAddress(id: $id, " +
  `patch: $patch) { id ${ADDRESS_FIELD_NAMES.join(" ")} } }`;

/** The address's own members of a generated value. */
const addressMembers = mutatedAddress.map((value) =>
  Object.fromEntries(ADDRESS_FIELD_NAMES.filter((n) => n in value).map((n) => [n, value[n]]))
);

/** What REST refused with: each problem's code and detail. */
function restProblems(answer: Answer): [string, string][] {
  return answer.body.errors.map((e: { error: string; detail: string }) => [e.error, e.detail]);
}

/** What GraphQL refused with: each error's code and message. */
function graphqlProblems(answer: Answer): [string, string][] {
  return answer.body.errors.map((
    e: { message: string; extensions: { code: string } },
  ) => [e.extensions.code, e.message]);
}

/** An address as REST answers it, from GraphQL's (the id a string, absent fields null). */
function asRest(node: Record<string, unknown>): Record<string, unknown> {
  const present = Object.entries(node).filter(([, value]) => value !== null);
  return { ...Object.fromEntries(present), id: Number(node.id) };
}

Deno.test("GraphQL fuzz: any address input gets REST's answer, and a refusal stores nothing", async () => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  const base = server.httpUrl;
  const rest = addressBook(base);
  const count = async () => (await rest.listAll()).length;
  try {
    let stored = 0;
    await fuzz("GraphQL inputs: create", 60, addressMembers, async (input) => {
      const where = JSON.stringify(input).slice(0, 300);
      const viaRest = await answerOf(await rest.create(input));
      const viaGraphql = await answerOf(
        await graphql(base, { query: CREATE, variables: { input } }),
      );
      if (viaRest.status === 201) {
        stored += 2;
        assert.equal(viaGraphql.body.errors, undefined, where);
        const created = asRest(viaGraphql.body.data.createAddress);
        assert.deepEqual({ ...created, id: viaRest.body.id }, viaRest.body, where);
      } else {
        assert.equal(viaRest.status, 400, where);
        assert.deepEqual(graphqlProblems(viaGraphql), restProblems(viaRest), where);
        assert.equal(viaGraphql.body.data, undefined, where);
        assert.equal(await count(), stored, where);
      }
    });

    await fuzz(
      "GraphQL inputs: merge patch",
      60,
      fc.tuple(addressMembers, fc.boolean()),
      async ([patch, idAsNumber]) => {
        const where = JSON.stringify(patch).slice(0, 300);
        // Two equal addresses, one patched in each style.
        const [a, b] = await Promise.all([rest.create(EXAMPLE_INPUT), rest.create(EXAMPLE_INPUT)]);
        const [restId, graphqlId] = [(await a.json()).id, (await b.json()).id];
        stored += 2;
        const viaRest = await answerOf(await rest.patch(restId, patch));
        const viaGraphql = await answerOf(
          await graphql(base, {
            query: UPDATE,
            variables: { id: idAsNumber ? graphqlId : String(graphqlId), patch },
          }),
        );
        const restNow = (await answerOf(await rest.get(restId))).body;
        const graphqlNow = (await answerOf(await rest.get(graphqlId))).body;
        assert.deepEqual({ ...graphqlNow, id: restId }, restNow, where);
        if (viaRest.status === 200) {
          assert.equal(viaGraphql.body.errors, undefined, where);
          assert.deepEqual(asRest(viaGraphql.body.data.updateAddress), graphqlNow, where);
        } else {
          assert.equal(viaRest.status, 400, where);
          assert.deepEqual(graphqlProblems(viaGraphql), restProblems(viaRest), where);
          assert.deepEqual(graphqlNow, { id: graphqlId, ...EXAMPLE_INPUT }, where);
        }
      },
    );
    assert.equal(await count(), stored);
  } finally {
    await server.close();
  }
});
