/**
 * The gRPC child is a second process with its own heap, so each package it loads costs memory
 * twice (docs/bench.md, Memory). It serves gRPC alone: the HTTP framework, the OpenAPI generator
 * and GraphQL are the HTTP process's. lib/'s schemas give their OpenAPI metadata with zod's own
 * `.meta()` for this reason; an import of `@hono/zod-openapi` back into a module the child runs
 * would load all of them again.
 */
import assert from "node:assert/strict";

const CHILD = new URL("../../rpc/process/grpc_child.ts", import.meta.url);

/** Packages the child must not load: the HTTP framework, the OpenAPI generator, GraphQL. */
const NOT_IN_CHILD = [
  "hono",
  "@hono/zod-openapi",
  "@hono/zod-validator",
  "@asteasolutions/zod-to-openapi",
  "openapi3-ts",
  "yaml",
  "graphql",
];

interface InfoModule {
  specifier: string;
  dependencies?: { code?: { specifier: string } }[];
}

/** `npm:/@scope/name@^1.2.3/sub` → `@scope/name`. */
function packageOf(specifier: string): string {
  const path = specifier.replace(/^npm:\/?/, "");
  const parts = path.split("/");
  const name = path.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!;
  return name.replace(/(.)@.*$/, "$1");
}

/** The npm packages the child's modules import for their code (type-only imports left out). */
async function packagesLoaded(entry: URL): Promise<Set<string>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry.href],
    stdout: "piped",
    stderr: "null",
  }).output();
  assert.ok(out.success, "deno info ran");
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: InfoModule[];
  };
  const modules = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const packages = new Set<string>();
  const stack = [entry.href];
  while (stack.length > 0) {
    const specifier = stack.pop()!;
    if (seen.has(specifier)) continue;
    seen.add(specifier);
    if (specifier.startsWith("npm:")) packages.add(packageOf(specifier));
    for (const dependency of modules.get(specifier)?.dependencies ?? []) {
      if (dependency.code !== undefined) stack.push(dependency.code.specifier);
    }
  }
  return packages;
}

Deno.test("the package name of an npm specifier, as deno info writes them", () => {
  assert.equal(packageOf("npm:zod@^4.6.7"), "zod");
  assert.equal(
    packageOf("npm:/@hono/zod-openapi@1.6.3_hono@4.13.19_zod@4.6.7"),
    "@hono/zod-openapi",
  );
  assert.equal(packageOf("npm:/@connectrpc/connect@^2.2.0/protocol"), "@connectrpc/connect");
  assert.equal(packageOf("npm:/hpack.js@^2.1.6/lib/hpack/huffman.js"), "hpack.js");
});

Deno.test("the gRPC child loads no HTTP framework, OpenAPI generator or GraphQL", async () => {
  const packages = await packagesLoaded(CHILD);
  // What it does need is seen, so an empty walk cannot pass.
  for (const needed of ["@connectrpc/connect-node", "@bufbuild/protobuf", "zod", "jose"]) {
    assert.ok(packages.has(needed), `${needed} among ${[...packages].join(", ")}`);
  }
  assert.deepEqual(NOT_IN_CHILD.filter((name) => packages.has(name)), []);
});
