/**
 * Regenerates clients/gen/books_api.ts, the TypeScript types of the REST API, from the served
 * `/openapi.json` with openapi-typescript (`deno task generate:client`); with `--check`, fails
 * when the committed file differs from what the document gives now (part of `deno task check`).
 * clients/books_client.ts builds a typed openapi-fetch client on these types.
 */
import openapiTS, { astToString } from "openapi-typescript";
import { servedOpenApiText } from "../tools/openapi_document.ts";

const TARGET = new URL("gen/books_api.ts", import.meta.url);

const HEADER =
  "// Generated from /openapi.json by openapi-typescript (clients/generate.ts): do not " +
  "edit.\n// Regenerate with `deno task generate:client`; `deno task check` fails when stale.\n\n";

/** The generated module's text for the served document. */
async function generatedTypes(): Promise<string> {
  const document = JSON.parse(await servedOpenApiText());
  return HEADER + astToString(await openapiTS(document));
}

if (import.meta.main) {
  const text = await generatedTypes();
  if (Deno.args.includes("--check")) {
    const committed = await Deno.readTextFile(TARGET).catch(() => undefined);
    if (committed !== text) {
      console.error(
        "clients/gen/books_api.ts does not match /openapi.json; run `deno task generate:client` " +
          "and commit",
      );
      Deno.exit(1);
    }
    console.log("clients/gen/books_api.ts is up to date");
  } else {
    await Deno.writeTextFile(TARGET, text);
  }
}
