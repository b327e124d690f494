/**
 * Property-based fuzzing of GraphQL over real sockets (docs/fuzzing.md): documents built from
 * the schema and mutations of them, in random envelopes and content types. Every answer: no
 * 5xx, no internals, every error with `extensions.code`; the catalogue is unchanged.
 */
import assert from "node:assert/strict";
import {
  assertDetailedErrorBody,
  assertGraphqlErrors,
  assertNoInternals,
  fuzz,
} from "../support/fuzz.ts";
import { type GraphqlCase, graphqlCase } from "../support/fuzz_graphql.ts";
import { graphql } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";

function checkGraphql(c: GraphqlCase, res: Response, text: string): void {
  const where = `${c.method} ${c.path.slice(0, 80)} ${
    JSON.stringify(c.body?.slice(0, 200))
  } -> ${res.status}`;
  assert.ok(res.status < 500, `${where}: ${text.slice(0, 300)}`);
  assertNoInternals(text, where);
  // Deno's HTTP layer refuses a request head over about 64 KiB before the app sees it.
  if (res.status === 400 && text === "" && c.path.length > 48_000) return;
  assert.ok(res.headers.get("x-request-id"), `${where}: no X-Request-Id`);
  const type = (res.headers.get("content-type") ?? "").toLowerCase();
  if (type.startsWith("text/html")) {
    assert.equal(c.method, "GET", where);
    return;
  }
  if (text === "") {
    assert.ok(res.status >= 400 || c.method !== "POST", `${where}: empty answer`);
    return;
  }
  const body = JSON.parse(text);
  const errors = body.errors as Record<string, unknown>[] | undefined;
  if (errors !== undefined) {
    if (errors[0] && "extensions" in errors[0]) assertGraphqlErrors(body, where);
    else if (errors[0] && "error" in errors[0]) assertDetailedErrorBody(body, where);
    else assertGraphqlErrors(body, where);
  } else {
    assert.ok(res.status === 200 && "data" in body, `${where}: neither data nor errors: ${text}`);
  }
  if (res.status === 200 && body.data?.books && Array.isArray(body.data.books)) {
    for (const book of body.data.books) assert.equal(typeof book, "object", where);
  }
}

Deno.test("GraphQL fuzz: random documents and envelopes never get a 5xx; every error has a code", async () => {
  const server = await startTestServer();
  const base = server.httpUrl;
  const catalogue = async () =>
    await (await graphql(base, { query: "{ books { title year author { firstName lastName } } }" }))
      .text();
  try {
    const before = await catalogue();
    await fuzz("GraphQL", 500, graphqlCase, async (c) => {
      let request: Request;
      try {
        request = new Request(base + c.path, {
          method: c.method,
          headers: c.headers,
          body: c.body,
        });
      } catch {
        return; // fetch refuses the header values themselves
      }
      const res = await fetch(request);
      checkGraphql(c, res, await res.text());
    });
    assert.equal(await catalogue(), before);
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    assert.deepEqual(server.logs.filter((l) => l.msg === "unhandled error"), []);
  } finally {
    await server.close();
  }
});
