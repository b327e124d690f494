/**
 * The README and docs/*.md point at files and sections that exist: every relative Markdown link
 * names an existing file (and, for a Markdown file, an existing heading or `<a id>`), and every
 * path of this repository quoted in backticks (`rpc/http2/native_session.ts`) still exists. Files
 * move between folders; a reader following a stale link or path finds nothing.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);
// Outputs of local runs, not part of the repository.
const GENERATED = ["bench/results/", "data/"];

function read(path: string): string {
  return Deno.readTextFileSync(new URL(path, ROOT));
}

function exists(path: string): boolean {
  try {
    Deno.statSync(new URL(path, ROOT));
    return true;
  } catch {
    return false;
  }
}

function documents(): string[] {
  const docs = [...Deno.readDirSync(new URL("docs/", ROOT))]
    .filter((entry) => entry.isFile && entry.name.endsWith(".md"))
    .map((entry) => `docs/${entry.name}`)
    .sort();
  return ["README.md", ...docs];
}

/** `target` relative to the file `from`, as a path from the repository root. */
function resolve(from: string, target: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const segment of target.split("/")) {
    if (segment === "..") parts.pop();
    else if (segment !== "." && segment !== "") parts.push(segment);
  }
  return parts.join("/");
}

/** Markdown without its fenced code blocks (their `#` lines are comments, not headings). */
function prose(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```[^\n]*$/gm, "");
}

/** The anchors GitHub gives a Markdown file's headings, plus its explicit `<a id>` anchors. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of prose(text).matchAll(/^#{1,6} +(.+?) *$/gm)) {
    const slug = heading!.toLowerCase().replace(/[^\p{L}\p{N}\p{M}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  for (const [, id] of text.matchAll(/<a id="([^"]+)"/g)) anchors.add(id!);
  return anchors;
}

Deno.test("anchors follow GitHub's rule for headings", () => {
  const anchors = anchorsOf(
    "# Running anywhere: `deno serve`, `--parallel`, Deno Deploy\n## The gate's cost\n" +
      '## Notes\n## Notes\n```sh\n# not a heading\n```\n<a id="bad-request"></a>',
  );
  assert.deepEqual([...anchors].sort(), [
    "bad-request",
    "notes",
    "notes-1",
    "running-anywhere-deno-serve---parallel-deno-deploy",
    "the-gates-cost",
  ]);
});

Deno.test("every relative link in the README and docs/ names an existing file and section", () => {
  const broken: string[] = [];
  for (const file of documents()) {
    const text = prose(read(file));
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target!) || target!.startsWith("/")) continue;
      const [path = "", anchor] = target!.split("#");
      const resolved = path === "" ? file : resolve(file, path);
      if (!exists(resolved)) {
        broken.push(`${file}: ${target} (no file ${resolved})`);
      } else if (anchor !== undefined && resolved.endsWith(".md")) {
        if (!anchorsOf(read(resolved)).has(anchor)) {
          broken.push(`${file}: ${target} (no section #${anchor} in ${resolved})`);
        }
      }
    }
  }
  assert.deepEqual(broken, []);
});

Deno.test("every repository path quoted in the README and docs/ exists", () => {
  const folders = new Set(
    [...Deno.readDirSync(ROOT)].filter((entry) => entry.isDirectory).map((entry) => entry.name),
  );
  const missing: string[] = [];
  for (const file of documents()) {
    for (const [, path] of read(file).matchAll(/`([\w.-]+(?:\/[\w.-]+)+)`/g)) {
      const top = path!.split("/")[0]!;
      if (!folders.has(top) || GENERATED.some((prefix) => path!.startsWith(prefix))) continue;
      if (!exists(path!)) missing.push(`${file}: ${path}`);
    }
  }
  assert.deepEqual(missing, []);
});
