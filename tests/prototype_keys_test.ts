/**
 * No user input is a key into a plain object: the names `Object.prototype` carries
 * (`constructor`, `toString`, `__proto__`, …) are ordinary unknown names wherever a client can
 * send a name (asset names, languages, media types, header names, GraphQL operation names and
 * variables), never a 500.
 */
import assert from "node:assert/strict";
import { graphql } from "./support/requests.ts";
import { startTestServer } from "./support/server.ts";
import { PROTOTYPE_NAMES } from "./support/fuzz.ts";

Deno.test("Object.prototype names as asset names are 404 route-not-found, not 500", async () => {
  const server = await startTestServer();
  try {
    for (const prefix of ["/graphql/assets/", "/docs/assets/"]) {
      for (const name of PROTOTYPE_NAMES) {
        const res = await fetch(`${server.httpUrl}${prefix}${name}`);
        const body = await res.json();
        assert.equal(res.status, 404, `${prefix}${name}: ${JSON.stringify(body)}`);
        assert.equal(body.errors[0].error, "route-not-found");
        assert.equal(res.headers.get("content-type"), "application/json");
      }
      // The real assets are still served.
      const init = await fetch(`${server.httpUrl}${prefix}init.js`);
      assert.equal(init.status, 200);
      await init.body?.cancel();
    }
    const graphiql = await fetch(`${server.httpUrl}/graphql/assets/graphiql.min.css`);
    assert.equal(graphiql.status, 200);
    assert.match(graphiql.headers.get("content-type")!, /^text\/css/);
    await graphiql.body?.cancel();
    const swagger = await fetch(`${server.httpUrl}/docs/assets/swagger-ui.css`);
    assert.equal(swagger.status, 200);
    assert.match(swagger.headers.get("content-type")!, /^text\/css/);
    await swagger.body?.cancel();
    assert.deepEqual(server.logs.filter((l) => l.msg === "unhandled error"), []);
  } finally {
    await server.close();
  }
});

Deno.test("Object.prototype names as languages, media types, headers and GraphQL names", async () => {
  const server = await startTestServer();
  try {
    for (const name of PROTOTYPE_NAMES) {
      // A language, a media type and a header name: ordinary unknown ones.
      const missing = await fetch(`${server.httpUrl}/api/book/999999`, {
        headers: { "accept-language": `${name}, ${name}-DE;q=0.9`, [name]: name },
      });
      assert.equal(missing.status, 404, name);
      assert.equal(missing.headers.get("content-language"), "en");
      assert.equal((await missing.json()).errors[0].error, "book-not-found");
      const accept = await fetch(`${server.httpUrl}/rest/books`, {
        headers: { accept: `application/${name}` },
      });
      assert.equal(accept.status, 406, name);
      await accept.body?.cancel();
      // A GraphQL operation name and variables.
      const query = await graphql(
        server.httpUrl,
        `{"query":"query Q { books { title } }","operationName":${
          JSON.stringify(name)
        },"variables":{${JSON.stringify(name)}:1}}`,
        { accept: "application/json" },
      );
      const answer = await query.json();
      assert.ok(query.status < 500, `${name}: ${JSON.stringify(answer)}`);
      assert.equal(typeof answer.errors?.[0]?.message, "string", name);
    }
    // Variables declared with those names.
    const declared = await graphql(
      server.httpUrl,
      '{"query":"query Q($constructor: Int, $__proto__: String) { books { title } }",' +
        '"variables":{"constructor":1,"__proto__":"x","toString":2}}',
      { accept: "application/json" },
    );
    const declaredAnswer = await declared.json();
    assert.ok(declared.status < 500, JSON.stringify(declaredAnswer));
    assert.equal(declaredAnswer.errors[0].extensions.code, "invalid-parameter");
    assert.deepEqual(server.logs.filter((l) => l.msg === "unhandled error"), []);
  } finally {
    await server.close();
  }
});
