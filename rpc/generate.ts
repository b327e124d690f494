/**
 * Regenerates rpc/gen/ from rpc/proto/ (`deno task generate`), or with `--check` regenerates
 * into a temporary directory and fails when the result differs from the committed code (part of
 * `deno task check`). The buf CLI comes from npm through npx, pinned here; the protoc-gen-es
 * plugin is the npm package pinned in deno.json, run by Deno (see rpc/buf.gen.yaml).
 */
import { join, relative } from "node:path";

const BUF = "@bufbuild/buf@1.75.0";
const RPC_DIR = new URL(".", import.meta.url).pathname;
const GEN_DIR = join(RPC_DIR, "gen");

async function buf(outputDir: string): Promise<void> {
  const npx = Deno.build.os === "windows" ? "npx.cmd" : "npx";
  const { code, stderr } = await new Deno.Command(npx, {
    args: ["-y", BUF, "generate", "--output", outputDir],
    cwd: RPC_DIR,
    stdout: "inherit",
    stderr: "piped",
  }).output();
  const errors = new TextDecoder().decode(stderr).split("\n")
    // npm's notice about unrelated user configuration is not ours to report.
    .filter((line) => line.trim() !== "" && !line.startsWith("npm warn"));
  if (errors.length > 0) console.error(errors.join("\n"));
  if (code !== 0) throw new Error(`buf generate failed with exit code ${code}`);
}

async function listFiles(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  async function walk(current: string) {
    for await (const entry of Deno.readDir(current)) {
      const path = join(current, entry.name);
      if (entry.isDirectory) await walk(path);
      else files.set(relative(dir, path), await Deno.readTextFile(path));
    }
  }
  await walk(dir).catch((error) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  });
  return files;
}

/** The generated files that differ between two trees, with a reason each. */
async function differences(expectedDir: string, actualDir: string): Promise<string[]> {
  const expected = await listFiles(expectedDir);
  const actual = await listFiles(actualDir);
  const problems: string[] = [];
  for (const [name, text] of expected) {
    if (!actual.has(name)) problems.push(`missing: rpc/gen/${name}`);
    else if (actual.get(name) !== text) problems.push(`out of date: rpc/gen/${name}`);
  }
  for (const name of actual.keys()) {
    if (!expected.has(name)) problems.push(`not generated from any .proto: rpc/gen/${name}`);
  }
  return problems;
}

if (import.meta.main) {
  if (Deno.args.includes("--check")) {
    const temp = await Deno.makeTempDir({ prefix: "rpc-gen-" });
    try {
      await buf(temp);
      const problems = await differences(join(temp, "gen"), GEN_DIR);
      if (problems.length > 0) {
        console.error(
          `rpc/gen/ does not match rpc/proto/; run \`deno task generate\` and commit:\n  ${
            problems.join("\n  ")
          }`,
        );
        Deno.exit(1);
      }
      console.log("rpc/gen/ is up to date");
    } finally {
      await Deno.remove(temp, { recursive: true });
    }
  } else {
    await buf(RPC_DIR);
  }
}
