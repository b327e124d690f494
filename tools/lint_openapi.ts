/**
 * Lints the served OpenAPI document with Stoplight Spectral (`spectral:oas`, `.spectral.yaml`),
 * failing on any error or warning (`deno task check:openapi`, part of `deno task check`). The
 * CLI is the npm package pinned in deno.json, run by Deno without network access: its built-in
 * rulesets ship inside the package.
 */
import { join } from "node:path";
import { servedOpenApiText } from "./openapi_document.ts";

const ROOT = new URL("../", import.meta.url).pathname;

if (import.meta.main) {
  const dir = await Deno.makeTempDir({ prefix: "openapi-lint-" });
  try {
    const file = join(dir, "openapi.json");
    await Deno.writeTextFile(file, await servedOpenApiText());
    const { code, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--allow-read",
        "--allow-env",
        "--allow-sys",
        "npm:@stoplight/spectral-cli",
        "lint",
        file,
        "--ruleset",
        join(ROOT, ".spectral.yaml"),
        "--fail-severity",
        "warn",
      ],
      cwd: ROOT,
      stdout: "inherit",
      stderr: "piped",
    }).output();
    const errors = new TextDecoder().decode(stderr).split("\n")
      // Node's deprecation notice about a dependency of Spectral's is not a finding.
      .filter((line) => line.trim() !== "" && !/DeprecationWarning|--trace-deprecation/.test(line));
    if (errors.length > 0) console.error(errors.join("\n"));
    if (code !== 0) {
      console.error("Spectral: /openapi.json has errors or warnings (above)");
      Deno.exit(1);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
