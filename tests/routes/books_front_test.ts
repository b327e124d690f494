import assert from "node:assert/strict";
import { createLogger } from "../../lib/log.ts";
import { createApp } from "../../server/app.ts";
import { withHotReads } from "../../routes/books_front.ts";
import { encodedCatalogue } from "../../routes/books.ts";
import { createBookStore } from "../../store/books.ts";
import { DEFAULT_BOOKS, readCatalogue } from "../../store/kv/open.ts";
import { catalogueOnly, entryOf, see } from "../support/answers.ts";
import { checkContract } from "../support/contract.ts";

Deno.test("the hot catalogue reads answer exactly as the app does", async (t) => {
  const books = createBookStore(await readCatalogue(DEFAULT_BOOKS));
  const catalogue = encodedCatalogue(books);
  const lines: string[] = [];
  const logger = createLogger({ write: (text) => lines.push(text) });
  const app = createApp({ store: catalogueOnly(books), logger, maxBodyBytes: 1024 });
  const listen = { port: 0, hostname: "127.0.0.1", onListen: () => {} };
  const plain = Deno.serve(listen, entryOf(app));
  let appCalls = 0;
  const hot = Deno.serve(
    listen,
    entryOf(app, (inner) => withHotReads({ books, logger }, inner), () => appCalls++),
  );
  const plainUrl = `http://127.0.0.1:${plain.addr.port}`;
  const hotUrl = `http://127.0.0.1:${hot.addr.port}`;
  checkContract(plainUrl);
  checkContract(hotUrl);
  try {
    const cases: [string, RequestInit][] = [
      ["/rest/books", {}],
      ["/rest/books?page=2", {}],
      ["/api/book/1", {}],
      ["/api/book/32", { headers: { accept: "application/vnd.books.v1+json" } }],
      ["/api/book/3", { headers: { accept: "text/html, application/json;q=0.5" } }],
      ["/rest/books", { headers: { accept: "application/xml" } }],
      ["/rest/books", { headers: { accept: "application/json;q=0" } }],
      ["/api/book/3", { headers: { "x-request-id": "client-chosen-1" } }],
      ["/api/book/3", { headers: { "x-request-id": "not a valid id" } }],
      ["/api/book/99999", {}],
      ["/api/book/03", {}],
      ["/api/book/0", {}],
      ["/api/book/1e3", {}],
      ["/api/book/99999999999999999999", {}],
      ["/api/book/", {}],
      ["/rest/books/", {}],
      ["/api/book/2", { headers: { accept: "application/vnd.books.v2+json" } }],
      // Conditional reads: 304 with the same headers from both.
      ["/rest/books", { headers: { "if-none-match": catalogue.list.etag } }],
      ["/rest/books", { headers: { "if-none-match": `W/${catalogue.list.etag}` } }],
      ["/rest/books", { headers: { "if-none-match": `"other", ${catalogue.list.etag}` } }],
      ["/rest/books", { headers: { "if-none-match": "*" } }],
      ["/rest/books", { headers: { "if-none-match": '"stale"' } }],
      ["/api/book/1", { headers: { "if-none-match": catalogue.get(1)!.etag } }],
      ["/api/book/1", { headers: { "if-none-match": catalogue.get(2)!.etag } }],
      ["/api/book/99999", { headers: { "if-none-match": "*" } }],
      ["/rest/books", { method: "HEAD" }],
      ["/rest/books", { method: "POST", body: "{}" }],
      ["/api/book/3", { method: "DELETE" }],
    ];
    for (const [path, init] of cases) {
      await t.step(
        `${init.method ?? "GET"} ${path} ${JSON.stringify(init.headers ?? {})}`,
        async () => {
          const expected = await see(`${plainUrl}${path}`, init);
          const actual = await see(`${hotUrl}${path}`, init);
          if (typeof expected.body === "string" && expected.body.includes(plainUrl)) {
            // Error bodies link to the server's own documentation.
            expected.body = expected.body.replaceAll(plainUrl, hotUrl);
          }
          assert.deepEqual(actual, expected);
        },
      );
    }

    await t.step("the successful reads are answered without the app; others reach it", async () => {
      appCalls = 0;
      for (const path of ["/rest/books", "/api/book/1", "/api/book/32?x=1"]) {
        const res = await fetch(`${hotUrl}${path}`);
        assert.equal(res.status, 200);
        await res.body?.cancel();
      }
      assert.equal(appCalls, 0);
      await (await fetch(`${hotUrl}/api/book/99999`)).body?.cancel();
      assert.equal(appCalls, 1);
    });

    await t.step("a hot read writes the same access-log line as the app", async () => {
      lines.length = 0;
      await (await fetch(`${hotUrl}/api/book/7?x=1`, { headers: { "x-request-id": "log-1" } }))
        .body?.cancel();
      logger.flush();
      const line = lines.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l))
        .find((l) => l.requestId === "log-1");
      assert.deepEqual(
        { ...line, time: undefined, durationMs: undefined },
        {
          time: undefined,
          level: "info",
          msg: "request",
          method: "GET",
          path: "/api/book/7",
          status: 200,
          durationMs: undefined,
          requestId: "log-1",
        },
      );
      assert.equal(typeof line.durationMs, "number");
    });
  } finally {
    await Promise.all([plain.shutdown(), hot.shutdown()]);
  }
});
