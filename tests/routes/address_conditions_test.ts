/**
 * If-None-Match on the address book's writes (RFC 9110 13.1.2, 13.2.1, 13.2.2), over a socket:
 * a version 2 PUT with `If-None-Match: *` creates only if absent, and every write whose
 * `If-None-Match` matches the caller's current address (or is `*` where it exists) is 412 and
 * changes nothing; with `If-Match`, `If-Match` decides first. The checks happen in the write's
 * atomic operation: concurrent create-if-absent PUTs of one id create it once.
 */
import assert from "node:assert/strict";
import { EXAMPLE_INPUT } from "../../lib/address.ts";
import { addressBook, bearer, errorCode, type Fields, V2 } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const SCOPES = "addresses:read addresses:write";

Deno.test("If-None-Match on writes: 412 with nothing changed where it matches, create-if-absent with *", async (t) => {
  const server = await startTestServer({ GRPC_PORT: "off", AUTH_JWT_SECRET: SECRET });
  const alice = addressBook(server.httpUrl, bearer(await hsToken({ sub: "alice", scope: SCOPES })));
  const bob = addressBook(server.httpUrl, bearer(await hsToken({ sub: "bob", scope: SCOPES })));
  const v2 = { "content-type": V2 };
  /** What alice's address `id` is now: status, ETag, body. */
  const state = async (id: number) => {
    const res = await alice.get(id);
    return { status: res.status, etag: res.headers.get("etag"), body: await res.json() };
  };
  /** A 412 `precondition-failed` naming `header`, after which address `id` is as it was. */
  const refused = async (res: Response, id: number, before: unknown, header: string) => {
    assert.equal(res.status, 412);
    const body = await res.json();
    assert.equal(body.errors[0].error, "precondition-failed");
    assert.match(body.errors[0].detail, new RegExp(header));
    assert.deepEqual(await state(id), before, "nothing changed");
  };
  try {
    const created = await alice.create(EXAMPLE_INPUT);
    const id = (await created.json()).id as number;
    const etag = created.headers.get("etag")!;
    const before = await state(id);

    await t.step("a v2 PUT of an existing address with If-None-Match: * is 412", async () => {
      const res = await alice.put(id, { ...EXAMPLE_INPUT, city: "Paris" }, {
        ...v2,
        "if-none-match": "*",
      });
      await refused(res, id, before, "If-None-Match");
      // Version 1 too: the caller's address exists.
      await refused(
        await alice.put(id, { ...EXAMPLE_INPUT, city: "Paris" }, { "if-none-match": "*" }),
        id,
        before,
        "If-None-Match",
      );
    });

    await t.step(
      "a PATCH with If-None-Match of its current ETag (strong or weak, in a list) is 412",
      async () => {
        for (const header of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
          const res = await alice.patch(id, { city: "Rome" }, { "if-none-match": header });
          await refused(res, id, before, "If-None-Match");
        }
      },
    );

    await t.step("a DELETE with If-None-Match: * (or its ETag) is 412", async () => {
      await refused(await alice.delete(id, { "if-none-match": "*" }), id, before, "If-None-Match");
      await refused(await alice.delete(id, { "if-none-match": etag }), id, before, "If-None-Match");
    });

    await t.step("If-Match is evaluated first (RFC 9110 13.2.2)", async () => {
      // Both fail: If-Match is the one named.
      const both = await alice.patch(id, { city: "Rome" }, {
        "if-match": '"stale"',
        "if-none-match": "*",
      });
      await refused(both, id, before, "If-Match");
      // If-Match holds, If-None-Match still fails.
      const second = await alice.delete(id, { "if-match": etag, "if-none-match": "*" });
      await refused(second, id, before, "If-None-Match");
      // Both hold: the write goes ahead.
      const ok = await alice.patch(id, { city: "Rome" }, {
        "if-match": etag,
        "if-none-match": '"other"',
      });
      assert.equal(ok.status, 200);
      assert.notEqual(ok.headers.get("etag"), etag);
      assert.equal((await ok.json()).city, "Rome");
    });

    await t.step("If-None-Match of another ETag lets the write go ahead", async () => {
      const now = await state(id);
      const res = await alice.put(id, EXAMPLE_INPUT, { ...v2, "if-none-match": etag });
      assert.equal(res.status, 200, "the old ETag is not the current one");
      assert.notEqual(res.headers.get("etag"), now.etag);
      await res.body?.cancel();
    });

    await t.step("If-None-Match: * on a v2 PUT of a free id creates it (201), once", async () => {
      const free = id + 5_000;
      const headers: Fields = { ...v2, "if-none-match": "*" };
      const first = await alice.put(free, EXAMPLE_INPUT, headers);
      assert.equal(first.status, 201);
      assert.equal(first.headers.get("location"), `/addresses/${free}`);
      await first.body?.cancel();
      const stored = await state(free);
      const again = await alice.put(free, { ...EXAMPLE_INPUT, city: "Oslo" }, headers);
      await refused(again, free, stored, "If-None-Match");
      // Another owner's id is absent for bob, so `*` holds; the id rule then answers.
      const taken = await bob.put(free, EXAMPLE_INPUT, headers);
      assert.equal(taken.status, 409);
      assert.equal(await errorCode(taken), "id-taken");
      // Version 1: an id the caller does not hold is stored as new, with a generated id.
      const v1 = await bob.put(free, EXAMPLE_INPUT, { "if-none-match": "*" });
      assert.equal(v1.status, 201);
      assert.notEqual((await v1.json()).id, free);
    });

    await t.step(
      "create-if-absent racing itself: of 8 concurrent PUTs of one free id, one creates",
      async () => {
        const free = id + 9_000;
        const answers = await Promise.all(
          Array.from(
            { length: 8 },
            (_, i) =>
              alice.put(free, { ...EXAMPLE_INPUT, city: `C${i}` }, { ...v2, "if-none-match": "*" }),
          ),
        );
        const statuses = answers.map((r) => r.status).sort();
        await Promise.all(answers.map((r) => r.body?.cancel()));
        assert.deepEqual(statuses, [201, 412, 412, 412, 412, 412, 412, 412]);
      },
    );

    await t.step("POST and DELETE /addresses: the collection exists and has no ETag", async () => {
      const listed = (await alice.listAll()).length;
      const post = await alice.create(EXAMPLE_INPUT, { "if-none-match": "*" });
      assert.equal(post.status, 412);
      assert.equal(await errorCode(post), "precondition-failed");
      const tagged = await alice.create(EXAMPLE_INPUT, { "if-match": '"x"' });
      assert.equal(tagged.status, 412);
      await tagged.body?.cancel();
      assert.equal((await alice.listAll()).length, listed, "nothing created");
      const created = await alice.create(EXAMPLE_INPUT, {
        "if-none-match": '"x"',
        "if-match": "*",
      });
      assert.equal(created.status, 201);
      await created.body?.cancel();
      const erase = await alice.erase({ "if-match": "*", "if-none-match": "*" });
      assert.equal(erase.status, 412);
      await erase.body?.cancel();
      assert.equal((await alice.listAll()).length, listed + 1, "nothing erased");
    });

    await t.step("a too long If-None-Match is 400 invalid-parameter, before anything", async () => {
      const long = `"${"e".repeat(1000)}"`;
      for (
        const res of [
          await alice.patch(id, { city: "X" }, { "if-none-match": long }),
          await alice.delete(id, { "if-none-match": long }),
          await alice.create(EXAMPLE_INPUT, { "if-none-match": long }),
        ]
      ) {
        assert.equal(res.status, 400);
        assert.equal(await errorCode(res), "invalid-parameter");
      }
    });
  } finally {
    await server.close();
  }
});
