/**
 * lib/ is the ground floor: what every layer shares, importing no other folder of the project
 * (docs/architecture.md). A module of lib/ that imported `security/`, `rpc/gen/` or `store/`
 * would drag that floor into everything above it, and the folders would no longer show the flow.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const LIB = new URL("lib/", ROOT);

// Every static and dynamic import or re-export: `import … from "x"`, `import "x"`,
// `export … from "x"`, `import("x")`, `import type … from "x"`. Comments and strings that merely
// look like imports are not skipped: a false alarm is easier to settle than a missed import.
const SPECIFIER =
  /\b(?:import|export)\b[^;'"`]*?\bfrom\s*(["'])([^"']+)\1|\bimport\s*(["'])([^"']+)\3|\bimport\s*\(\s*(["'])([^"']+)\5\s*\)/g;

/** The module specifiers a TypeScript source names. */
export function specifiersOf(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(SPECIFIER)) found.push(match[2] ?? match[4] ?? match[6]!);
  return found;
}

/**
 * The imports of `source` (a module at `url`) that leave `floor`: a relative or absolute path
 * resolving outside it. Bare specifiers (`hono`, `node:crypto`, `npm:…`) are packages, not floors.
 */
export function upwardImports(source: string, url: URL, floor: URL): string[] {
  return specifiersOf(source).filter((specifier) => {
    const local = specifier.startsWith(".") || specifier.startsWith("/") ||
      specifier.startsWith("file:");
    return local && !new URL(specifier, url).href.startsWith(floor.href);
  });
}

function* typescriptFiles(dir: URL): Generator<URL> {
  for (const entry of Deno.readDirSync(dir)) {
    if (entry.isDirectory) yield* typescriptFiles(new URL(`${entry.name}/`, dir));
    else if (entry.name.endsWith(".ts")) yield new URL(entry.name, dir);
  }
}

Deno.test("no module of lib/ imports another folder of the project", () => {
  const files = [...typescriptFiles(LIB)];
  assert.ok(files.length > 10, "lib/ was read");
  const upward: string[] = [];
  let local = 0;
  for (const file of files) {
    const source = Deno.readTextFileSync(file);
    local += specifiersOf(source).filter((s) => s.startsWith(".")).length;
    for (const specifier of upwardImports(source, file, LIB)) {
      upward.push(`${file.href.slice(ROOT.href.length)} imports ${specifier}`);
    }
  }
  // lib/'s modules import each other: the parser sees them.
  assert.ok(local > 10, `only ${local} imports within lib/ found`);
  assert.deepEqual(upward, []);
});

Deno.test("the import check sees every form of import, and only those leaving the floor", () => {
  const url = new URL("http/example.ts", LIB);
  const source = [
    'import { a } from "./a.ts";',
    'import type { B } from "../../security/caller.ts";',
    "import {\n  c,\n  d,\n} from '../../rpc/gen/books/v1/books_pb.ts';",
    'export { e } from "../../store/store.ts";',
    'export * from "../errors.ts";',
    'import "../../server/side_effect.ts";',
    'const f = await import("../../routes/books.ts");',
    'import { z } from "@hono/zod-openapi";',
    'import { createHash } from "node:crypto";',
    'import x from "/etc/elsewhere.ts";',
  ].join("\n");
  assert.deepEqual(upwardImports(source, url, LIB), [
    "../../security/caller.ts",
    "../../rpc/gen/books/v1/books_pb.ts",
    "../../store/store.ts",
    "../../server/side_effect.ts",
    "../../routes/books.ts",
    "/etc/elsewhere.ts",
  ]);
});
