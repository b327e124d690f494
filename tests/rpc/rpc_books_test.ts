import assert from "node:assert/strict";
import { toJson } from "@bufbuild/protobuf";
import { BooksResponseSchema } from "../../rpc/gen/books/v1/books_pb.ts";
import { BOOKS_PATH, connectJson, sendJson } from "../support/requests.ts";
import { booksClient, everyTransport, grpcJsClient, grpcJsUnary } from "../support/rpc_clients.ts";
import { startTestServer } from "../support/server.ts";

interface RestBook {
  id: number;
  title: string;
  year: number;
  author: { firstName: string; lastName: string };
}

/** What a protobuf client sees for the REST list: the same books, same order, no id. */
function asProto(books: RestBook[]) {
  return books.map((b) => ({
    title: b.title,
    year: b.year,
    author: { firstName: b.author.firstName, lastName: b.author.lastName },
  }));
}

Deno.test("books.v1.BooksService/books over every protocol and both ports", async (t) => {
  const server = await startTestServer();
  try {
    const rest = await (await fetch(`${server.httpUrl}/rest/books`)).json() as RestBook[];
    const expected = asProto(rest);
    assert.ok(expected.length >= 25);

    for (const [name, transport] of everyTransport(server)) {
      await t.step(`${name}: the REST catalogue, same order`, async () => {
        let header: Headers | undefined;
        const response = await booksClient(transport).books({}, {
          headers: { "x-request-id": "rpc-test-1" },
          onHeader: (h) => (header = h),
        });
        assert.deepEqual(toJson(BooksResponseSchema, response), { book: expected });
        assert.equal(header?.get("x-request-id"), "rpc-test-1");
      });
    }

    await t.step("@grpc/grpc-js with @grpc/proto-loader (independent implementation)", async () => {
      using client = grpcJsClient(server.grpcUrl!);
      const answer = await grpcJsUnary(client, "books", {}, { "x-request-id": "grpc-js-1" });
      assert.ifError(answer.error);
      assert.deepEqual(answer.response!.book, expected);
      assert.equal(answer.metadata?.get("x-request-id")[0], "grpc-js-1");
    });

    await t.step("a Connect GET (browser- and cache-friendly) on the main port", async () => {
      const res = await fetch(
        `${server.httpUrl}/books.v1.BooksService/books?connect=v1&encoding=json&message=%7B%7D`,
      );
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "application/json");
      assert.match(res.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
      assert.deepEqual(await res.json(), { book: expected });
    });

    await t.step("a Connect POST with curl-style JSON on the main port", async () => {
      const res = await connectJson(server.httpUrl);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { book: expected });
    });

    await t.step("main port: REST-style 405 with Allow and 404 around the procedure", async () => {
      const put = await sendJson(`${server.httpUrl}${BOOKS_PATH}`, "PUT", "{}");
      assert.equal(put.status, 405);
      assert.equal(put.headers.get("allow"), "GET, HEAD, POST, OPTIONS");
      assert.equal((await put.json()).errors[0].error, "method-not-allowed");
      const unknown = await sendJson(`${server.httpUrl}/books.v1.BooksService/nope`, "POST", "{}");
      assert.equal(unknown.status, 404);
      assert.equal((await unknown.json()).errors[0].error, "route-not-found");
    });

    await t.step(
      "main port: native gRPC is refused (415), it needs the gRPC listener",
      async () => {
        const res = await fetch(`${server.httpUrl}/books.v1.BooksService/books`, {
          method: "POST",
          headers: { "content-type": "application/grpc" },
          body: new Uint8Array(5),
        });
        assert.equal(res.status, 415);
        await res.body?.cancel();
      },
    );

    await t.step(
      "main port: a Connect call with a bad JSON body is INVALID_ARGUMENT (400)",
      async () => {
        const res = await connectJson(server.httpUrl, {}, '{"unterminated');
        assert.equal(res.status, 400);
        assert.equal((await res.json()).code, "invalid_argument");
      },
    );
  } finally {
    await server.close();
  }
});
