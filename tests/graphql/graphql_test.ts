import { entryOf } from "../support/answers.ts";
import assert from "node:assert/strict";
import { toJson } from "@bufbuild/protobuf";
import { BooksResponseSchema } from "../../rpc/gen/books/v1/books_pb.ts";
import type { Book } from "../../lib/schemas.ts";
import { createApp } from "../../server/app.ts";
import { createBookStore } from "../../store/books.ts";
import type { Store } from "../../store/store.ts";
import { captureLogs } from "../support/logs.ts";
import { type Answer, answerOf, type Fields, graphql } from "../support/requests.ts";
import { booksClient, connectTransport } from "../support/rpc_clients.ts";
import { serveEntry, startTestServer } from "../support/server.ts";
import { stubStore } from "../support/stores.ts";

const BOOKS_QUERY = "{ books { title year author { firstName lastName } } }";
const GRAPHQL_RESPONSE = "application/graphql-response+json";

/** `POST /graphql`, read whole. */
async function post(base: string, body: unknown, headers: Fields = {}): Promise<Answer> {
  return await answerOf(await graphql(base, body, headers));
}

/** Asserts a rejection without data, and that its first error has `code`; returns the errors. */
function assertErrors(reply: Answer, status: number, code: string) {
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  assert.equal(reply.body.data, undefined);
  assert.ok(Array.isArray(reply.body.errors) && reply.body.errors.length > 0);
  assert.equal(reply.body.errors[0].extensions.code, code);
  assert.equal(typeof reply.body.errors[0].message, "string");
  assert.match(reply.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
  return reply.body.errors as { message: string; extensions: Record<string, unknown> }[];
}

/** The books query still answers: a rejected request left the server working. */
async function assertResponsive(base: string) {
  const reply = await post(base, { query: "{ books { title } }" });
  assert.equal(reply.status, 200);
  assert.ok(reply.body.data.books.length >= 25);
}

function aliases(n: number, selection = "books { title }"): string {
  return "{ " + Array.from({ length: n }, (_, i) => `a${i}: ${selection}`).join(" ") + " }";
}

Deno.test("GraphQL over a socket", async (t) => {
  const server = await startTestServer();
  const base = server.httpUrl;
  try {
    const rest = await (await fetch(`${base}/rest/books`)).json();

    await t.step("golden: the same books in the same order as GET /rest/books", async () => {
      const reply = await post(base, { query: BOOKS_QUERY });
      assert.equal(reply.status, 200);
      assert.equal(reply.headers.get("content-type"), "application/json; charset=utf-8");
      assert.equal(reply.body.errors, undefined);
      // deno-lint-ignore no-explicit-any
      const expected = rest.map(({ id: _, ...book }: any) => book);
      assert.deepEqual(reply.body.data.books, expected);
      assert.match(reply.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
      // The second time the result comes from the cache: the client's id is still echoed.
      const again = await post(base, { query: BOOKS_QUERY }, { "x-request-id": "gql-7" });
      assert.deepEqual(again.body.data.books, expected);
      assert.equal(again.headers.get("x-request-id"), "gql-7");
    });

    await t.step("golden: gRPC's books.v1.BooksService/books returns the same books", async () => {
      // The Connect protocol over HTTP/1.1 on the main port: same service, no HTTP/2 session.
      const response = await booksClient(connectTransport(base, "1.1")).books({});
      const grpcBooks = toJson(BooksResponseSchema, response) as { book: unknown[] };
      const graphql = await post(base, { query: BOOKS_QUERY });
      assert.deepEqual(grpcBooks.book, graphql.body.data.books);
    });

    await t.step("field selection: exactly the selected fields", async () => {
      const reply = await post(base, { query: "{ books { title author { lastName } } }" });
      assert.equal(reply.status, 200);
      assert.deepEqual(Object.keys(reply.body), ["data"]);
      const books = reply.body.data.books;
      assert.equal(books.length, rest.length);
      books.forEach((book: { title: string; author: { lastName: string } }, i: number) => {
        assert.deepEqual(book, {
          title: rest[i].title,
          author: { lastName: rest[i].author.lastName },
        });
      });
      const years = await post(base, { query: "{ books { year } }" });
      assert.deepEqual(
        years.body.data.books,
        rest.map((b: { year: number }) => ({ year: b.year })),
      );
    });

    await t.step("variables and operationName select what runs", async () => {
      const query =
        "query Full($withYear: Boolean!) { books { title year @include(if: $withYear) } }" +
        " query Names { books { author { lastName } } }";
      const withYear = await post(base, {
        query,
        operationName: "Full",
        variables: { withYear: true },
      });
      assert.equal(withYear.status, 200);
      assert.deepEqual(withYear.body.data.books[0], { title: rest[0].title, year: rest[0].year });
      const without = await post(base, {
        query,
        operationName: "Full",
        variables: { withYear: false },
      });
      assert.deepEqual(without.body.data.books[0], { title: rest[0].title });
      const names = await post(base, { query, operationName: "Names", variables: null });
      assert.deepEqual(names.body.data.books[0], { author: { lastName: rest[0].author.lastName } });

      const ambiguous = await post(base, { query });
      assert.match(assertErrors(ambiguous, 200, "invalid-parameter")[0]!.message, /operation name/);
      const unknown = await post(base, { query, operationName: "Nope" });
      assert.match(assertErrors(unknown, 200, "invalid-parameter")[0]!.message, /"Nope"/);
      const badVariable = await post(
        base,
        { query, operationName: "Full", variables: { withYear: "yes" } },
        { accept: GRAPHQL_RESPONSE },
      );
      const errors = assertErrors(badVariable, 400, "invalid-parameter");
      assert.match(errors[0]!.message, /\$withYear/);
      const missing = await post(base, { query, operationName: "Full" });
      assert.match(assertErrors(missing, 200, "invalid-parameter")[0]!.message, /\$withYear/);
    });

    await t.step("media types: charset, graphql-response+json, 406 and 415", async () => {
      const charset = await post(base, { query: "{ books { title } }" }, {
        "content-type": "application/json; charset=utf-8",
      });
      assert.equal(charset.status, 200);
      const modern = await post(base, { query: "{ books { title } }" }, {
        accept: `${GRAPHQL_RESPONSE}, application/json;q=0.9`,
      });
      assert.equal(modern.status, 200);
      assert.equal(modern.headers.get("content-type"), `${GRAPHQL_RESPONSE}; charset=utf-8`);
      assert.equal(modern.body.data.books.length, rest.length);
      const legacy = await post(base, { query: "{ books { title } }" }, {
        accept: `${GRAPHQL_RESPONSE};q=0.5, application/json`,
      });
      assert.equal(legacy.headers.get("content-type"), "application/json; charset=utf-8");
      assertErrors(
        await post(base, { query: BOOKS_QUERY }, { accept: "text/xml" }),
        406,
        "not-acceptable",
      );
      for (
        const type of ["text/plain", "application/graphql", "application/json; charset=latin1"]
      ) {
        assertErrors(
          await post(base, { query: BOOKS_QUERY }, { "content-type": type }),
          415,
          "unsupported-media-type",
        );
      }
    });

    await t.step("syntax errors: a clear message with a location, never a 500", async () => {
      const legacy = await post(base, { query: "{ books { title " });
      const [error] = assertErrors(legacy, 200, "invalid-parameter");
      assert.match(error!.message, /^Syntax Error: Expected Name, found <EOF>\./);
      assert.deepEqual(legacy.body.errors[0].locations, [{ line: 1, column: 17 }]);
      const modern = await post(base, { query: "{ books { title " }, { accept: GRAPHQL_RESPONSE });
      assertErrors(modern, 400, "invalid-parameter");
      assert.equal(modern.headers.get("content-type"), `${GRAPHQL_RESPONSE}; charset=utf-8`);
    });

    await t.step(
      "validation errors: unknown field, books as a mutation, subscription",
      async () => {
        const unknown = await post(base, { query: "{ books { isbn title } }" });
        const [error] = assertErrors(unknown, 200, "invalid-parameter");
        assert.equal(error!.message, 'Cannot query field "isbn" on type "Book".');
        assert.deepEqual(unknown.body.errors[0].locations, [{ line: 1, column: 11 }]);
        const suggestion = await post(base, { query: "{ books { titel } }" }, {
          accept: GRAPHQL_RESPONSE,
        });
        assert.match(assertErrors(suggestion, 400, "invalid-parameter")[0]!.message, /"title"/);
        const mutation = await post(base, { query: "mutation { books { title } }" });
        assert.equal(
          assertErrors(mutation, 200, "invalid-parameter")[0]!.message,
          'Cannot query field "books" on type "Mutation".',
        );
        const subscription = await post(base, { query: "subscription { books { title } }" });
        assert.equal(
          assertErrors(subscription, 200, "invalid-parameter")[0]!.message,
          'Cannot query field "books" on type "Subscription".',
        );
        // A valid subscription over plain JSON: it is served as a stream of events only.
        const plain = await post(base, { query: "subscription { addressEvents { id } }" });
        assertErrors(plain, 406, "not-acceptable");
      },
    );

    await t.step("bad request parameters: 400 with invalid-body or invalid-parameter", async () => {
      assertErrors(await post(base, '{"query": '), 400, "invalid-body");
      assertErrors(await post(base, ""), 400, "invalid-body");
      assertErrors(await post(base, "[]"), 400, "invalid-body");
      assertErrors(await post(base, { qeury: BOOKS_QUERY }), 400, "invalid-parameter");
      assertErrors(await post(base, { query: 42 }), 400, "invalid-parameter");
      assertErrors(
        await post(base, { query: BOOKS_QUERY, variables: [1] }),
        400,
        "invalid-parameter",
      );
      assertErrors(
        await post(base, { query: BOOKS_QUERY, operationName: 1 }),
        400,
        "invalid-parameter",
      );
      assertErrors(
        await post(base, { query: BOOKS_QUERY, extensions: "x" }),
        400,
        "invalid-parameter",
      );
      const ok = await post(base, { query: BOOKS_QUERY, extensions: { trace: true } });
      assert.equal(ok.status, 200);
    });

    await t.step("limits: an over-deep query is rejected before execution", async () => {
      let selection = "name";
      for (let i = 0; i < 12; i++) selection = `ofType { ${selection} }`;
      const reply = await post(base, {
        query: `{ __type(name: "Book") { fields { type { ${selection} } } } }`,
      });
      const errors = assertErrors(reply, 200, "payload-too-large");
      const depth = errors.find((e) => e.extensions.limit === "depth");
      assert.ok(depth, JSON.stringify(errors));
      assert.match(depth.message, /depth limit of 10 exceeded.*GRAPHQL_MAX_DEPTH/);
      await assertResponsive(base);
    });

    await t.step("limits: 1,000 aliases are rejected; 31 hit the alias limit itself", async () => {
      const thousand = await post(base, { query: aliases(1000) }, { accept: GRAPHQL_RESPONSE });
      const [error] = assertErrors(thousand, 400, "payload-too-large");
      assert.ok(["tokens", "aliases"].includes(String(error!.extensions.limit)));
      const over = await post(base, { query: aliases(31) });
      const [aliasError] = assertErrors(over, 200, "payload-too-large");
      assert.equal(aliasError!.extensions.limit, "aliases");
      assert.match(
        aliasError!.message,
        /Aliases limit of 30 exceeded, found 31.*GRAPHQL_MAX_ALIASES/,
      );
      const within = await post(base, { query: aliases(30) });
      assert.equal(within.status, 200);
      assert.equal(within.body.data.a29.length, rest.length);
      await assertResponsive(base);
    });

    await t.step("limits: every alias counts, `__typename` ones too", async () => {
      const over = await post(base, { query: aliases(31, "__typename") });
      const [aliasError] = assertErrors(over, 200, "payload-too-large");
      assert.equal(aliasError!.extensions.limit, "aliases");
      assert.match(aliasError!.message, /Aliases limit of 30 exceeded, found 31/);
      const within = await post(base, { query: aliases(30, "__typename") });
      assert.equal(within.status, 200);
      assert.equal(within.body.data.a29, "Query");
    });

    await t.step("limits: tokens, directives and cost", async () => {
      const tokens = await post(base, { query: `{ books { ${"title ".repeat(2100)}} }` });
      const [tokenError] = assertErrors(tokens, 200, "payload-too-large");
      assert.equal(tokenError!.extensions.limit, "tokens");
      assert.match(tokenError!.message, /Token limit of 2000 exceeded.*GRAPHQL_MAX_TOKENS/);

      const directives = await post(base, {
        query: `{ books { title ${"@include(if: true) ".repeat(51)}} }`,
      });
      const [directiveError] = assertErrors(directives, 200, "payload-too-large");
      assert.equal(directiveError!.extensions.limit, "directives");

      // Within depth (7), aliases (30) and tokens, but nested fragments multiply the cost.
      const nested = "books { ... on Book { ... on Book { ... on Book { ... on Book { title year " +
        "author { firstName lastName } } } } } }";
      const cost = await post(base, { query: aliases(30, nested) });
      const [costError] = assertErrors(cost, 200, "payload-too-large");
      assert.equal(costError!.extensions.limit, "cost");
      assert.match(costError!.message, /Cost limit of 1000 exceeded, found \d+ .*GRAPHQL_MAX_COST/);
      await assertResponsive(base);
    });

    await t.step("limits: a 200 KB document is 413, and so is one just over 64 KiB", async () => {
      const huge = await post(base, { query: `{ books { title } } # ${"x".repeat(200 * 1024)}` });
      assertErrors(huge, 413, "payload-too-large");
      const over = await post(base, { query: `{ books { title } } # ${"x".repeat(65 * 1024)}` });
      const [error] = assertErrors(over, 413, "payload-too-large");
      assert.equal(error!.extensions.limit, "document-size");
      assert.match(error!.message, /larger than 65536 bytes.*GRAPHQL_MAX_DOCUMENT_BYTES/);
      const under = await post(base, { query: `{ books { title } } # ${"x".repeat(60 * 1024)}` });
      assert.equal(under.status, 200);
      await assertResponsive(base);
    });

    await t.step("introspection is on by default", async () => {
      const reply = await post(base, { query: "{ __schema { queryType { name } } }" });
      assert.deepEqual(reply.body, { data: { __schema: { queryType: { name: "Query" } } } });
    });

    await t.step("GET: a query is 405, non-HTML 406, a browser gets GraphiQL", async () => {
      const withQuery = await fetch(`${base}/graphql?query=${encodeURIComponent(BOOKS_QUERY)}`);
      assert.equal(withQuery.status, 405);
      assert.equal(withQuery.headers.get("allow"), "GET, HEAD, POST, OPTIONS");
      assert.equal((await withQuery.json()).errors[0].extensions.code, "method-not-allowed");
      const api = await fetch(`${base}/graphql`, { headers: { accept: "application/json" } });
      assert.equal(api.status, 406);
      assert.equal((await api.json()).errors[0].extensions.code, "not-acceptable");
      const anything = await fetch(`${base}/graphql`, { headers: { accept: "*/*" } });
      assert.equal(anything.status, 406);
      await anything.body?.cancel();

      const page = await fetch(`${base}/graphql`, {
        headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" },
      });
      assert.equal(page.status, 200);
      assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
      assert.match(page.headers.get("content-security-policy") ?? "", /script-src 'self'/);
      const html = await page.text();
      const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
      assert.ok(refs.length >= 5, html);
      for (const ref of refs) {
        assert.match(ref, /^\/graphql\/assets\/[a-z.-]+$/, `not served here: ${ref}`);
        const asset = await fetch(`${base}${ref}`);
        assert.equal(asset.status, 200, ref);
        assert.match(asset.headers.get("content-type") ?? "", /^text\/(javascript|css)/);
        assert.ok((await asset.arrayBuffer()).byteLength > 0);
      }
      const missing = await fetch(`${base}/graphql/assets/nope.js`);
      assert.equal(missing.status, 404);
      await missing.body?.cancel();
    });

    await t.step("other methods: 405 with Allow, OPTIONS lists them", async () => {
      const put = await fetch(`${base}/graphql`, { method: "PUT", body: "{}" });
      assert.equal(put.status, 405);
      assert.equal(put.headers.get("allow"), "GET, HEAD, POST, OPTIONS");
      await put.body?.cancel();
      const options = await fetch(`${base}/graphql`, { method: "OPTIONS" });
      assert.equal(options.status, 204);
      assert.equal(options.headers.get("allow"), "GET, HEAD, POST, OPTIONS");
    });

    await t.step("every response carries X-Request-Id; a client's is echoed", async () => {
      const reply = await post(base, { query: "{ nope }" }, { "x-request-id": "trace-42" });
      assert.equal(reply.headers.get("x-request-id"), "trace-42");
    });

    await t.step("limit rejections are logged with the request id, never the query", () => {
      const line = server.logs.find((l) => l.msg === "graphql limit exceeded");
      assert.ok(line);
      assert.match(String(line.requestId), /^[0-9a-f-]{36}$/);
      assert.ok(!JSON.stringify(server.logs).includes("ofType { ofType"));
    });
  } finally {
    await server.close();
  }
});

Deno.test("GraphQL limits and introspection follow the configuration", async (t) => {
  const server = await startTestServer({
    GRAPHQL_MAX_DEPTH: "2",
    GRAPHQL_MAX_TOKENS: "100000",
    GRAPHQL_INTROSPECTION: "false",
  });
  const base = server.httpUrl;
  try {
    await t.step("GRAPHQL_MAX_DEPTH=2 rejects a depth-3 query", async () => {
      const reply = await post(base, { query: "{ books { author { lastName } } }" });
      const [error] = assertErrors(reply, 200, "payload-too-large");
      assert.match(error!.message, /depth limit of 2 exceeded, found 3/);
      assert.equal((await post(base, { query: "{ books { title } }" })).status, 200);
    });

    await t.step("with the token limit raised, 1,000 aliases meet the alias limit", async () => {
      const reply = await post(base, { query: aliases(1000) });
      const [error] = assertErrors(reply, 200, "payload-too-large");
      assert.equal(error!.extensions.limit, "aliases");
      assert.match(error!.message, /found 1000/);
      await assertResponsive(base);
    });

    await t.step(
      "GRAPHQL_INTROSPECTION=false: no __schema, no field suggestions, no SDL",
      async () => {
        const schema = await post(base, { query: "{ __schema { types { name } } }" });
        assert.match(assertErrors(schema, 200, "invalid-parameter")[0]!.message, /introspection/);
        const typo = await post(base, { query: "{ books { titel } }" });
        const [error] = assertErrors(typo, 200, "invalid-parameter");
        assert.equal(error!.message, 'Cannot query field "titel" on type "Book".');
        const sdl = await fetch(`${base}/graphql/schema.graphql`);
        assert.equal(sdl.status, 404);
        assert.equal((await sdl.json()).errors[0].error, "route-not-found");
      },
    );
  } finally {
    await server.close();
  }
});

/** A store whose second book fails when its title is read, as corrupt data would. */
function storeWithFailingBook(): Store {
  const good = createBookStore([
    { id: 1, title: "Good", year: 2000, author: { firstName: "A", lastName: "B" } },
  ]);
  const bad = {
    id: 2,
    year: 2001,
    author: { firstName: "C", lastName: "D" },
    get title(): string {
      throw new Error("disk on fire: secret-internal-detail");
    },
  } as Book;
  const catalogue = Object.freeze([...good.list(), bad]);
  return stubStore(
    { ...good, list: () => catalogue },
    () => Promise.reject(new Error("address disk on fire")),
  );
}

Deno.test("an unexpected resolver failure is masked, logged with the request id", async () => {
  const { logger, lines } = captureLogs("info");
  const app = createApp({ store: storeWithFailingBook(), logger, maxBodyBytes: 1024 });
  const http = serveEntry(entryOf(app));
  try {
    const base = http.url;
    for (const accept of ["application/json", GRAPHQL_RESPONSE]) {
      const reply = await post(base, { query: "{ books { title year } }" }, { accept });
      // A field error keeps the data that could be resolved (GraphQL-over-HTTP: data means 200).
      assert.equal(reply.status, 200);
      assert.deepEqual(reply.body.data, { books: [{ title: "Good", year: 2000 }, null] });
      assert.equal(reply.body.errors.length, 1);
      const [error] = reply.body.errors;
      assert.equal(error.extensions.code, "internal");
      assert.equal(error.extensions.requestId, reply.headers.get("x-request-id"));
      assert.ok(error.message.includes(reply.headers.get("x-request-id")!), error.message);
      assert.deepEqual(error.path, ["books", 1, "title"]);
      assert.ok(!JSON.stringify(reply.body).includes("disk on fire"));
    }
    // Unaffected fields still answer, and the failure is not cached as a success.
    const years = await post(base, { query: "{ books { year } }" });
    assert.deepEqual(years.body, { data: { books: [{ year: 2000 }, { year: 2001 }] } });
    // So does the address book's store failing: its field is null, the cause masked.
    const address = await post(base, { query: "{ books { year } address(id: 1) { id } }" });
    assert.equal(address.status, 200);
    assert.deepEqual(address.body.data, { books: [{ year: 2000 }, { year: 2001 }], address: null });
    assert.equal(address.body.errors[0].extensions.code, "internal");
    assert.ok(!address.text.includes("disk on fire"));
    await new Promise((r) => setTimeout(r, 10));
    logger.flush();
    const logged = lines.filter((l) => l.msg === "graphql field failed") as {
      error: string;
      stack: string;
      path: string;
      requestId: string;
    }[];
    assert.equal(logged.length, 3);
    assert.match(logged[0]!.error, /disk on fire/);
    assert.match(logged[0]!.stack, /get title/);
    assert.equal(logged[0]!.path, "books.1.title");
    assert.match(logged[0]!.requestId, /^[0-9a-f-]{36}$/);
  } finally {
    await http.close();
  }
});
