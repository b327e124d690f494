/**
 * The generated client (clients/) drives the address book against a real server over a socket,
 * as a user of the published document would. Every answer also passes the contract check
 * (tests/support/contract.ts).
 */
import assert from "node:assert/strict";
import { createBooksClient, MERGE_PATCH, type Schemas, V2 } from "../../clients/books_client.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const ADA = { name: "Ada Lovelace", city: "London", postalCode: "W1J 7NT" };

Deno.test("the generated client drives the address book over a socket", async (t) => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET });
  const token = await hsToken({ sub: "alice", scope: "addresses:read addresses:write" });
  const api = createBooksClient(server.httpUrl, { token });
  try {
    await t.step("books: the catalogue and one book", async () => {
      const list = await api.GET("/rest/books");
      assert.equal(list.response.status, 200);
      assert.ok(list.data!.length >= 25);
      const one = await api.GET("/api/book/{id}", { params: { path: { id: list.data![0]!.id } } });
      assert.deepEqual(one.data, list.data![0]);
    });

    let ada: Schemas["Address"];
    await t.step("create: 201 with Location and the stored address", async () => {
      const { data, response } = await api.POST("/addresses", { body: ADA });
      assert.equal(response.status, 201);
      ada = data!;
      assert.deepEqual(ada, { id: ada.id, ...ADA });
      assert.equal(response.headers.get("location"), `/addresses/${ada.id}`);
    });

    await t.step("read: the same address", async () => {
      const { data, response } = await api.GET("/addresses/{id}", {
        params: { path: { id: ada.id } },
      });
      assert.equal(response.status, 200);
      assert.deepEqual(data, ada);
    });

    await t.step("list with paging: every address once, ascending id", async () => {
      const created = [ada.id];
      for (const city of ["Paris", "Lagos", "Lima", "Oslo"]) {
        const { data } = await api.POST("/addresses", { body: { ...ADA, city } });
        created.push(data!.id);
      }
      const seen: number[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const { data, response } = await api.GET("/addresses", {
          params: { query: { limit: 2, ...(cursor === undefined ? {} : { cursor }) } },
        });
        assert.equal(response.status, 200);
        assert.ok(data!.addresses.length <= 2);
        seen.push(...data!.addresses.map((a) => a.id));
        cursor = data!.nextCursor ?? undefined;
        pages++;
      } while (cursor !== undefined);
      assert.deepEqual(seen, created.toSorted((a, b) => a - b));
      assert.equal(pages, 3);
    });

    await t.step("version 2 PUT: created at the path id, then replaced whole", async () => {
      const id = ada.id + 1000;
      const put = await api.PUT("/addresses/{id}", {
        params: { path: { id } },
        body: { name: "Grace Hopper", city: "Arlington", postalCode: "22201" },
        headers: { "content-type": V2 },
      });
      assert.equal(put.response.status, 201);
      assert.equal(put.response.headers.get("content-type"), V2);
      assert.equal(put.response.headers.get("location"), `/addresses/${id}`);
      assert.deepEqual(put.data, {
        id,
        name: "Grace Hopper",
        city: "Arlington",
        postalCode: "22201",
      });
      const again = await api.PUT("/addresses/{id}", {
        params: { path: { id } },
        body: { name: "Grace B. Hopper", city: "New York", postalCode: "10001" },
        headers: { "content-type": V2 },
      });
      assert.equal(again.response.status, 200);
      assert.deepEqual(again.data, {
        id,
        name: "Grace B. Hopper",
        city: "New York",
        postalCode: "10001",
      });
    });

    await t.step("merge-patch: only the members sent change", async () => {
      const { data, response } = await api.PATCH("/addresses/{id}", {
        params: { path: { id: ada.id } },
        body: { city: "Cambridge" },
        headers: { "content-type": MERGE_PATCH },
      });
      assert.equal(response.status, 200);
      assert.deepEqual(data, { ...ada, city: "Cambridge" });
    });

    await t.step("delete: 204, then the typed 404 error", async () => {
      const gone = await api.DELETE("/addresses/{id}", { params: { path: { id: ada.id } } });
      assert.equal(gone.response.status, 204);
      const { error, response } = await api.GET("/addresses/{id}", {
        params: { path: { id: ada.id } },
      });
      assert.equal(response.status, 404);
      assert.equal(error!.errors[0]!.error, "address-not-found");
    });

    await t.step("auth errors: 401 without a token, 403 without the scope", async () => {
      const anonymous = createBooksClient(server.httpUrl);
      const refused = await anonymous.GET("/addresses");
      assert.equal(refused.response.status, 401);
      assert.equal(refused.error!.errors[0]!.error, "unauthorized");
      assert.equal(refused.response.headers.get("www-authenticate"), 'Bearer realm="books"');
      const reader = createBooksClient(server.httpUrl, {
        token: await hsToken({ sub: "alice", scope: "addresses:read" }),
      });
      const forbidden = await reader.POST("/addresses", { body: ADA });
      assert.equal(forbidden.response.status, 403);
      assert.equal(forbidden.error!.errors[0]!.error, "forbidden");
      // The reader is alice too: the addresses written above are hers to read.
      const listed = await reader.GET("/addresses");
      assert.equal(listed.response.status, 200);
      assert.equal(listed.data!.addresses.length, 5);
    });
  } finally {
    await server.close();
  }
});
