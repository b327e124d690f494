/**
 * The OpenAPI document as generators and validators read it: stable operation ids, JSON Schema
 * patterns, examples that validate, and the contract check (tests/support/contract.ts) that
 * holds every test's answers to it.
 */
import assert from "node:assert/strict";
import { DOCUMENTED_POSTAL_CODE_PATTERN, POSTAL_CODE_PATTERN } from "../../lib/address.ts";
import { servedOpenApiText } from "../../tools/openapi_document.ts";
import {
  checkAnswer,
  contractOf,
  ContractViolation,
  routeFor,
  validatorAt,
} from "../support/contract.ts";

const document = JSON.parse(await servedOpenApiText());
const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

function operations(): { method: string; path: string; operation: Record<string, unknown> }[] {
  return Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap((
    [path, item],
  ) =>
    Object.entries(item).filter(([method]) => METHODS.includes(method)).map(([method, op]) => ({
      method,
      path,
      operation: op as Record<string, unknown>,
    }))
  );
}

Deno.test("every operation has a stable camelCase operationId, tags, a summary and a description", () => {
  const ids = operations().map(({ operation }) => operation.operationId as string);
  assert.equal(new Set(ids).size, ids.length, `unique: ${ids}`);
  for (const { method, path, operation } of operations()) {
    const where = `${method} ${path}`;
    assert.match(operation.operationId as string, /^[a-z][a-zA-Z0-9]*$/, where);
    assert.ok((operation.tags as string[]).length > 0, where);
    for (const tag of operation.tags as string[]) {
      assert.ok(["books", "addresses", "service"].includes(tag), `${where}: tag ${tag}`);
    }
    assert.ok((operation.summary as string).length > 0, where);
    assert.ok((operation.description as string).length > 0, where);
  }
  const byRoute = new Map(operations().map((o) => [`${o.method} ${o.path}`, o.operation]));
  const expected: [string, string][] = [
    ["get /rest/books", "listBooks"],
    ["get /api/book/{id}", "getBook"],
    ["post /addresses", "createAddress"],
    ["get /addresses", "listAddresses"],
    ["get /addresses/{id}", "getAddress"],
    ["put /addresses/{id}", "putAddress"],
    ["patch /addresses/{id}", "patchAddress"],
    ["delete /addresses/{id}", "deleteAddress"],
    ["get /", "getEntryPoint"],
    ["get /healthz", "getLiveness"],
    ["get /readyz", "getReadiness"],
    ["get /openapi.json", "getOpenApiDocument"],
    ["get /docs", "getApiReference"],
    ["get /docs/errors", "getErrorReference"],
  ];
  for (const [route, id] of expected) assert.equal(byRoute.get(route)?.operationId, id, route);
  assert.deepEqual(document.servers, [{
    url: "/",
    description: "The server that serves this document",
  }]);
  assert.deepEqual(document.tags.map((t: { name: string }) => t.name), [
    "books",
    "addresses",
    "service",
  ]);
  assert.equal(document.components.securitySchemes.bearerAuth.scheme, "bearer");
});

Deno.test("every error answer is documented with both error bodies; 401, 429 and 503 everywhere gated", () => {
  for (const { method, path, operation } of operations()) {
    const responses = operation.responses as Record<string, { $ref?: string }>;
    const probe = path === "/healthz" || path === "/readyz";
    for (const status of probe ? ["503"] : ["401", "429", "503"]) {
      assert.ok(responses[status], `${method} ${path} documents ${status}`);
    }
    if (path.startsWith("/addresses") || path.startsWith("/rest/") || path.startsWith("/api/")) {
      assert.ok(responses["403"], `${method} ${path} documents 403`);
    }
    for (const [status, entry] of Object.entries(responses)) {
      if (Number(status) < 400) continue;
      const response = entry.$ref === undefined
        ? entry
        : document.components.responses[entry.$ref.split("/").at(-1)!];
      assert.deepEqual(
        Object.keys(response.content).sort(),
        ["application/json", "application/problem+json"],
        `${method} ${path} ${status}`,
      );
    }
  }
  const v2 = "application/vnd.books.v2+json";
  assert.ok(document.paths["/addresses/{id}"].put.responses["201"].content[v2]);
  assert.ok(document.paths["/addresses/{id}"].put.requestBody.content[v2]);
});

/** Every pattern in the document, with where it is. */
function patterns(value: unknown, at = "#"): [string, string][] {
  if (value === null || typeof value !== "object") return [];
  const found: [string, string][] = [];
  for (const [key, inner] of Object.entries(value)) {
    if (key === "pattern" && typeof inner === "string") found.push([at, inner]);
    else found.push(...patterns(inner, `${at}/${key}`));
  }
  return found;
}

Deno.test("patterns are JSON Schema patterns: no regex literal or flags, valid with and without Unicode mode", () => {
  const found = patterns(document);
  assert.ok(found.length >= 2, JSON.stringify(found));
  for (const [at, pattern] of found) {
    assert.doesNotMatch(
      pattern,
      /^\/|\/[dgimsuvy]*$/,
      `${at}: ${pattern} looks like a regex literal`,
    );
    new RegExp(pattern);
    new RegExp(pattern, "u");
  }
  assert.ok(found.some(([, p]) => p === DOCUMENTED_POSTAL_CODE_PATTERN));
});

Deno.test("the documented postal code pattern refuses no postal code the server accepts", () => {
  // Both patterns are `^[class]+$`: a string matches when each of its characters does, so every
  // code point settles it. Validators without Unicode mode see an astral character as two
  // surrogates, each checked on its own.
  const documented = [
    new RegExp(DOCUMENTED_POSTAL_CODE_PATTERN),
    new RegExp(DOCUMENTED_POSTAL_CODE_PATTERN, "u"),
  ];
  let accepted = 0;
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const ch = String.fromCodePoint(cp);
    const server = POSTAL_CODE_PATTERN.test(ch);
    if (server) accepted++;
    for (const pattern of documented) {
      if (server) assert.ok(pattern.test(ch), `U+${cp.toString(16)} (${pattern.flags})`);
      // On ASCII, the documented pattern is exact.
      else if (cp < 0x80) assert.ok(!pattern.test(ch), `U+${cp.toString(16)} (${pattern.flags})`);
    }
  }
  assert.ok(accepted > 100_000, `letters and digits: ${accepted}`);
  for (const pattern of documented) assert.ok(pattern.test("W1J 7NT") && pattern.test("75008"));
});

/** Every `example` in the document, with the pointer of the schema it must satisfy. */
function examples(value: unknown, at = "#"): { schema: string; example: unknown }[] {
  if (value === null || typeof value !== "object") return [];
  const found: { schema: string; example: unknown }[] = [];
  const object = value as Record<string, unknown>;
  if (Object.hasOwn(object, "example")) {
    // A media type or parameter names its schema; a schema carries its own example.
    const schema = Object.hasOwn(object, "schema") ? `${at}/schema` : at;
    found.push({ schema, example: object.example });
  }
  if (Object.hasOwn(object, "examples") && Object.hasOwn(object, "schema")) {
    for (const entry of Object.values(object.examples as Record<string, { value: unknown }>)) {
      found.push({ schema: `${at}/schema`, example: entry.value });
    }
  } else if (Array.isArray(object.examples)) {
    for (const example of object.examples) found.push({ schema: at, example });
  }
  for (const [key, inner] of Object.entries(object)) {
    if (key === "example" || key === "examples") continue;
    found.push(...examples(inner, `${at}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`));
  }
  return found;
}

Deno.test("every example in the document validates against its own schema (JSON Schema 2020-12)", () => {
  const contract = contractOf(document);
  const found = examples(document);
  assert.ok(found.length >= 10, `examples: ${found.length}`);
  for (const { schema, example } of found) {
    const validate = validatorAt(contract, schema);
    assert.ok(
      validate(example),
      `${schema}: ${JSON.stringify(example)}: ${JSON.stringify(validate.errors)}`,
    );
  }
});

// A document of two operations, to show that the check finds what it should.
const SMALL = {
  openapi: "3.1.0",
  info: { title: "t", version: "1" },
  paths: {
    "/things/{id}": {
      get: {
        operationId: "getThing",
        responses: {
          200: {
            description: "ok",
            headers: { ETag: { required: true, schema: { type: "string" } } },
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  properties: { id: { type: "integer" } },
                  required: ["id"],
                },
              },
            },
          },
          204: { description: "none" },
          429: { $ref: "#/components/responses/Limited" },
        },
      },
    },
    "/things/special": {
      get: { operationId: "getSpecial", responses: { 200: { description: "ok" } } },
    },
  },
  components: {
    responses: {
      Limited: {
        description: "limited",
        headers: { "Retry-After": { required: true, schema: { type: "integer" } } },
      },
    },
  },
};

Deno.test("the contract check refuses what the document does not describe, and only that", () => {
  const contract = contractOf(SMALL as never);
  const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
  const answer = (status: number, headers: Record<string, string>, body: Uint8Array) => ({
    method: "GET",
    path: "/things/7",
    status,
    headers: new Headers(headers),
    body,
  });
  const good = { "content-type": "application/json; charset=utf-8", etag: '"a"' };
  assert.equal(checkAnswer(contract, answer(200, good, json({ id: 7 }))), "getThing");
  assert.equal(checkAnswer(contract, answer(204, {}, new Uint8Array())), "getThing");
  assert.equal(
    checkAnswer(contract, answer(429, { "retry-after": "3" }, new Uint8Array())),
    "getThing",
  );
  const refused: [string, ReturnType<typeof answer>][] = [
    ["status", answer(500, good, json({ id: 7 }))],
    ["content type", answer(200, { ...good, "content-type": "text/plain" }, json({ id: 7 }))],
    ["schema", answer(200, good, json({ id: "7" }))],
    ["not JSON", answer(200, good, new TextEncoder().encode("{"))],
    ["required header", answer(200, { "content-type": "application/json" }, json({ id: 7 }))],
    ["body where none", answer(204, {}, json({}))],
    ["header schema", answer(429, { "retry-after": "soon" }, new Uint8Array())],
    ["referenced required header", answer(429, {}, new Uint8Array())],
  ];
  for (const [what, bad] of refused) {
    assert.throws(() => checkAnswer(contract, bad), ContractViolation, what);
  }
  // Undocumented requests are not the document's business.
  assert.equal(
    checkAnswer(contract, { ...answer(405, {}, new Uint8Array()), method: "POST" }),
    undefined,
  );
  assert.equal(
    checkAnswer(contract, { ...answer(404, {}, new Uint8Array()), path: "/nope" }),
    undefined,
  );
  // A literal path wins over a template (OpenAPI path matching).
  assert.equal(routeFor(contract, "GET", "/things/special")?.operation.operationId, "getSpecial");
  assert.equal(routeFor(contract, "HEAD", "/things/8")?.operation.operationId, "getThing");
});
