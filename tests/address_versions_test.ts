/**
 * ETags and page tokens of the address book, one thing in every style, over sockets: REST with
 * `fetch`, GraphQL over `fetch`, AddressService with Connect-ES (every framing on both ports) and
 * @grpc/grpc-js.
 *
 * - An ETag is one version's: addresses created in one atomic operation have ETags of their own,
 *   another address's ETag is no precondition of this one, and it carries nothing of the store's
 *   commit counter. It is the same string in REST's `ETag`, GraphQL's `etag` and gRPC's `etag`.
 * - A page token (REST's `cursor`, GraphQL's `after`, gRPC's `page_token`) is opaque and its
 *   owner's: another owner's, an edited one, one of another server's KV and one of the old
 *   readable format are `invalid-parameter` in every style; one style's token resumes the
 *   listing in another, with any page size.
 */
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { EXAMPLE_INPUT } from "../lib/address.ts";
import { addressBook, bearer, errorCode, type Fields, graphql } from "./support/requests.ts";
import {
  addressClient,
  errorInfo,
  everyTransport,
  grpcJsClient,
  grpcJsErrorInfo,
  grpcJsUnary,
  protoDefinition,
  rpcFailure,
} from "./support/rpc_clients.ts";
import { startTestServer, type TestServer } from "./support/server.ts";
import { hsToken, SECRET } from "./support/tokens.ts";

const SCOPES = "addresses:read addresses:write";
const ETAG = /^"[A-Za-z0-9_-]{22}"$/;

const PAGE = `query($first: Int, $after: String) {
  addresses(first: $first, after: $after) {
    edges { cursor node { id etag } }
    pageInfo { hasNextPage endCursor }
  }
}`;

/** The KV versionstamps of every address record of a server's KV file. */
async function versionstamps(server: TestServer): Promise<string[]> {
  const kv = await Deno.openKv(server.kvPath);
  try {
    const stamps: string[] = [];
    for await (const e of kv.list({ prefix: ["addresses"] })) stamps.push(e.versionstamp);
    return stamps;
  } finally {
    kv.close();
  }
}

/** How many of the bytes of two base64url tokens of one length differ. */
function differingBytes(a: string, b: string): number {
  const bytes = (t: string) => atob(t.replaceAll("-", "+").replaceAll("_", "/"));
  const [x, y] = [bytes(a), bytes(b)];
  let n = 0;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) n++;
  return n;
}

/** One owner's doors: REST, GraphQL, and AddressService over grpc-js. */
async function caller(server: TestServer, sub: string) {
  const auth: Fields = bearer(await hsToken({ sub, scope: SCOPES }));
  const definition = protoDefinition("addresses/v1/addresses.proto", {
    keepCase: true,
    longs: String,
    defaults: true,
  });
  const grpcJs = grpcJsClient(server.grpcUrl!, {
    definition,
    service: ["addresses", "v1", "AddressService"],
  });
  return {
    auth,
    rest: addressBook(server.httpUrl, auth),
    graphql: async (query: string, variables: object = {}) =>
      await (await graphql(server.httpUrl, { query, variables }, auth)).json(),
    grpcJs,
    grpcJsCall: <T>(method: string, request: object) =>
      grpcJsUnary<T>(grpcJs, method, request, { authorization: auth.authorization! }),
  };
}

Deno.test("ETags: each address and version its own, opaque, strong, one string in REST, GraphQL and gRPC", async (t) => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET });
  const alice = await caller(server, "alice");
  try {
    const made: { id: number; etag: string }[] = [];

    await t.step(
      "24 creations at once over REST: 24 ETags, though they share commits",
      async () => {
        const answers = await Promise.all(
          Array.from(
            { length: 24 },
            (_, i) => alice.rest.create({ ...EXAMPLE_INPUT, city: `C${i}` }),
          ),
        );
        for (const res of answers) {
          assert.equal(res.status, 201);
          made.push({ id: (await res.json()).id, etag: res.headers.get("etag")! });
        }
        assert.equal(
          new Set(made.map((m) => m.etag)).size,
          24,
        );
        const stamps = await versionstamps(server);
        assert.ok(new Set(stamps).size < 24, "created in fewer atomic operations than addresses");
        for (const { etag } of made) {
          assert.match(etag, ETAG);
          for (const stamp of stamps) assert.ok(!etag.includes(stamp), "no versionstamp in it");
        }
      },
    );

    await t.step(
      "another address's ETag is no precondition of this one, in every style",
      async () => {
        const [a, b] = [made[0]!, made[1]!];
        const rest = await alice.rest.patch(b.id, { city: "X" }, { "if-match": a.etag });
        assert.equal(rest.status, 412);
        await rest.body?.cancel();
        const gql = await alice.graphql(
          "mutation($id: ID!, $ifMatch: String) { deleteAddress(id: $id, ifMatch: $ifMatch) }",
          { id: String(b.id), ifMatch: a.etag },
        );
        assert.equal(gql.errors?.[0]?.extensions?.code, "precondition-failed", JSON.stringify(gql));
        for (const [name, transport] of everyTransport(server)) {
          const failure = await rpcFailure(
            addressClient(transport).deleteAddress({ id: BigInt(b.id), etag: a.etag }, {
              headers: alice.auth,
            }),
          );
          assert.equal(failure.code, Code.Aborted, name);
          assert.equal(errorInfo(failure)?.reason, "precondition-failed", name);
        }
        const grpcJs = await alice.grpcJsCall("DeleteAddress", { id: String(b.id), etag: a.etag });
        assert.equal(grpcJsErrorInfo(grpcJs)?.reason, "precondition-failed");
        const res = await alice.rest.get(b.id);
        assert.equal(res.headers.get("etag"), b.etag, "b unchanged");
        await res.body?.cancel();
      },
    );

    await t.step("GraphQL and gRPC create with ETags of their own too", async () => {
      const aliases = Array.from(
        { length: 5 },
        (_, i) => `a${i}: createAddress(input: $input) { id etag }`,
      ).join(" ");
      const gql = await alice.graphql(`mutation($input: AddressInput!) { ${aliases} }`, {
        input: EXAMPLE_INPUT,
      });
      assert.equal(gql.errors, undefined, JSON.stringify(gql));
      const created = Object.values(gql.data) as { id: string; etag: string }[];
      const rpc = await Promise.all(
        Array.from({ length: 5 }, () =>
          addressClient(everyTransport(server)[0]![1]).createAddress(
            { address: EXAMPLE_INPUT },
            { headers: alice.auth },
          )),
      );
      const etags = [
        ...created.map((c) => c.etag),
        ...rpc.map((c) => c.etag),
        ...made.map((m) => m.etag),
      ];
      assert.equal(new Set(etags).size, etags.length);
      for (const etag of etags) assert.match(etag, ETAG);
    });

    await t.step(
      "one address, one ETag: REST's header, GraphQL's etag, gRPC's etag (every framing, grpc-js), pages included",
      async () => {
        const { id } = made[2]!;
        const res = await alice.rest.get(id);
        const etag = res.headers.get("etag")!;
        await res.body?.cancel();
        const gql = await alice.graphql("query($id: ID!) { address(id: $id) { etag } }", {
          id: String(id),
        });
        assert.equal(gql.data.address.etag, etag);
        for (const [name, transport] of everyTransport(server)) {
          const got = await addressClient(transport).getAddress({ id: BigInt(id) }, {
            headers: alice.auth,
          });
          assert.equal(got.etag, etag, name);
        }
        const grpcJs = await alice.grpcJsCall<{ etag: string }>("GetAddress", { id: String(id) });
        assert.equal(grpcJs.response?.etag, etag);
        // A page carries the same ETags.
        const page = await alice.graphql(PAGE, { first: 50 });
        const node = page.data.addresses.edges.find((e: { node: { id: string } }) =>
          e.node.id === String(id)
        );
        assert.equal(node.node.etag, etag);
        const listed = await addressClient(everyTransport(server)[0]![1]).listAddresses(
          { pageSize: 50 },
          { headers: alice.auth },
        );
        assert.equal(listed.addresses.find((a) => a.id === BigInt(id))?.etag, etag);
        // And a write gives a new one, the same in every style again.
        const patched = await alice.rest.patch(id, { city: "Y" }, { "if-match": etag });
        const next = patched.headers.get("etag")!;
        await patched.body?.cancel();
        assert.notEqual(next, etag);
        const again = await addressClient(everyTransport(server)[3]![1]).getAddress(
          { id: BigInt(id) },
          { headers: alice.auth },
        );
        assert.equal(again.etag, next);
      },
    );
  } finally {
    alice.grpcJs.close();
    await server.close();
  }
});

Deno.test("page tokens: opaque, the owner's, refused edited or from another KV, in every style; one style's resumes another's", async (t) => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET });
  const other = await startTestServer({ AUTH_JWT_SECRET: SECRET });
  const alice = await caller(server, "alice");
  const bob = await caller(server, "bob");
  const aliceElsewhere = await caller(other, "alice");
  try {
    const ids: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await alice.rest.create({ ...EXAMPLE_INPUT, city: `A${i}` });
      ids.push((await res.json()).id);
      await (await bob.rest.create(EXAMPLE_INPUT)).body?.cancel();
      await (await aliceElsewhere.rest.create(EXAMPLE_INPUT)).body?.cancel();
    }
    const firstPage = await (await fetch(`${server.httpUrl}/addresses?limit=2`, {
      headers: alice.auth,
    })).json();
    const token: string = firstPage.nextCursor;
    assert.match(token, /^[A-Za-z0-9_-]{22}$/);
    // Enciphered, not encoded: the token after the next address differs in most of its bytes.
    const after = (await (await fetch(`${server.httpUrl}/addresses?limit=3`, {
      headers: alice.auth,
    })).json()).nextCursor;
    assert.ok(differingBytes(token, after) >= 8, `${token} and ${after}`);

    /** Every style's answer to `token` for `who`: the error code, or "ok". */
    const answers = async (who: typeof alice, server: TestServer, token: string) => {
      const out: Record<string, string> = {};
      const rest = await fetch(
        `${server.httpUrl}/addresses?limit=2&cursor=${encodeURIComponent(token)}`,
        { headers: who.auth },
      );
      out.REST = rest.ok ? (await rest.body?.cancel(), "ok") : await errorCode(rest);
      const gql = await who.graphql(PAGE, { first: 2, after: token });
      out.GraphQL = gql.errors?.[0]?.extensions?.code ?? "ok";
      for (const [name, transport] of everyTransport(server)) {
        try {
          await addressClient(transport).listAddresses({ pageSize: 2, pageToken: token }, {
            headers: who.auth,
          });
          out[name] = "ok";
        } catch (error) {
          const failure = await rpcFailure(Promise.reject(error));
          out[name] = errorInfo(failure)?.reason ?? `no ErrorInfo (${failure.code})`;
          if (failure.code !== Code.InvalidArgument) out[name] += ` (code ${failure.code})`;
        }
      }
      const grpcJs = await who.grpcJsCall("ListAddresses", { page_size: 2, page_token: token });
      out["grpc-js"] = grpcJs.error ? grpcJsErrorInfo(grpcJs)?.reason ?? "?" : "ok";
      return out;
    };
    const everywhere = (value: string, seen: Record<string, string>) =>
      Object.fromEntries(Object.keys(seen).map((k) => [k, value]));

    await t.step("the owner's own token pages on in every style", async () => {
      const seen = await answers(alice, server, token);
      assert.deepEqual(seen, everywhere("ok", seen));
    });

    await t.step("bob holding alice's token: invalid-parameter in every style", async () => {
      const seen = await answers(bob, server, token);
      assert.deepEqual(seen, everywhere("invalid-parameter", seen));
    });

    await t.step("an edited token: invalid-parameter in every style", async () => {
      for (const at of [0, 10, 21]) {
        const c = token[at] === "A" ? "B" : "A";
        const edited = token.slice(0, at) + c + token.slice(at + 1);
        const seen = await answers(alice, server, edited);
        assert.deepEqual(seen, everywhere("invalid-parameter", seen), edited);
      }
    });

    await t.step(
      "a token of another server's KV (same owner): invalid-parameter in every style",
      async () => {
        const seen = await answers(aliceElsewhere, other, token);
        assert.deepEqual(seen, everywhere("invalid-parameter", seen));
      },
    );

    await t.step(
      'the old readable cursor, base64("a1:<id>"), and made-up ones: invalid-parameter',
      async () => {
        for (
          const made of [btoa(`a1:${ids[1]}`).replace(/=+$/, ""), "A".repeat(22), "not-a-cursor"]
        ) {
          const seen = await answers(alice, server, made);
          assert.deepEqual(seen, everywhere("invalid-parameter", seen), made);
        }
      },
    );

    await t.step("a walk whose pages change style and size lists every address once", async () => {
      const listed: number[] = [];
      let next: string | null = null;
      const grpc = addressClient(everyTransport(server)[0]![1]);
      for (let page = 0; page < 20; page++) {
        const size = [1, 3, 2][page % 3]!;
        let ids: number[];
        if (page % 3 === 0) {
          const query: string = next === null ? "" : `&cursor=${next}`;
          const body = await (await fetch(`${server.httpUrl}/addresses?limit=${size}${query}`, {
            headers: alice.auth,
          })).json();
          ids = body.addresses.map((a: { id: number }) => a.id);
          next = body.nextCursor;
        } else if (page % 3 === 1) {
          const gql = await alice.graphql(PAGE, { first: size, after: next });
          const connection = gql.data.addresses;
          ids = connection.edges.map((e: { node: { id: string } }) => Number(e.node.id));
          // Each edge's cursor resumes after it; the last is endCursor, REST's nextCursor.
          if (connection.edges.length > 0) {
            assert.equal(connection.edges.at(-1).cursor, connection.pageInfo.endCursor);
          }
          next = connection.pageInfo.hasNextPage ? connection.pageInfo.endCursor : null;
        } else {
          const answer = await grpc.listAddresses({ pageSize: size, pageToken: next ?? "" }, {
            headers: alice.auth,
          });
          ids = answer.addresses.map((a) => Number(a.id));
          next = answer.nextPageToken === "" ? null : answer.nextPageToken;
        }
        listed.push(...ids);
        if (next === null) break;
      }
      assert.deepEqual(listed, ids);
    });

    await t.step("GraphQL: an edge's cursor resumes after its address", async () => {
      const gql = await alice.graphql(PAGE, { first: 3 });
      const second = gql.data.addresses.edges[1];
      const rest = await (await fetch(
        `${server.httpUrl}/addresses?limit=1&cursor=${second.cursor}`,
        { headers: alice.auth },
      )).json();
      assert.equal(rest.addresses[0].id, ids[2]);
    });
  } finally {
    for (const who of [alice, bob, aliceElsewhere]) who.grpcJs.close();
    await server.close();
    await other.close();
  }
});
