import type { OpenAPIHono } from "@hono/zod-openapi";
import { AppError } from "../lib/errors.ts";
import type { AppEnv } from "../lib/http/hono_env.ts";
import { requires } from "../security/access.ts";
import { DOCS_ASSETS_PATH, DOCS_PATH, OPENAPI_PATH } from "../lib/paths.ts";

const JS = "text/javascript; charset=utf-8";
const CSS = "text/css; charset=utf-8";

// Swagger UI, read at run time from the installed npm package (nothing third-party committed).
// A Map, as the name comes from the request path: a plain object would find `constructor`.
const PACKAGE_FILES = new Map<string, { file: string; type: string }>([
  ["swagger-ui-bundle.js", { file: "swagger-ui-bundle.js", type: JS }],
  ["swagger-ui.css", { file: "swagger-ui.css", type: CSS }],
]);

// Our start-up script, a file of its own so the page's CSP needs no inline script. No validator
// badge: it would ask validator.swagger.io about the document.
const INIT_SCRIPT = `"use strict";
window.ui = SwaggerUIBundle({
  url: new URL(${JSON.stringify(OPENAPI_PATH)}, location.href).href,
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference – books and addresses</title>
<link rel="stylesheet" href="${DOCS_ASSETS_PATH}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui">Loading the API reference…</div>
<script src="${DOCS_ASSETS_PATH}/swagger-ui-bundle.js"></script>
<script src="${DOCS_ASSETS_PATH}/init.js"></script>
</body>
</html>
`;

const loaded = new Map<string, Promise<Uint8Array<ArrayBuffer>>>();

function packageFile(name: string): Promise<Uint8Array<ArrayBuffer>> | undefined {
  const asset = PACKAGE_FILES.get(name);
  if (asset === undefined) return undefined;
  let bytes = loaded.get(name);
  if (bytes === undefined) {
    // swagger-ui-dist has no `exports` map: its files sit next to its package.json.
    const root = import.meta.resolve("swagger-ui-dist/package.json");
    bytes = Deno.readFile(new URL(asset.file, root));
    // A failed read (package missing) is retried on the next request rather than cached.
    bytes.catch(() => loaded.delete(name));
    loaded.set(name, bytes);
  }
  return bytes;
}

/** `GET /docs`: Swagger UI over `/openapi.json`, with its assets under `/docs/assets/`. */
export function apiReferenceRoutes(app: OpenAPIHono<AppEnv>): void {
  app.get(DOCS_PATH, requires("public"), () =>
    new Response(PAGE, {
      headers: {
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-cache",
      },
    }));
  app.get(`${DOCS_ASSETS_PATH}/:name`, requires("public"), async (c) => {
    const name = c.req.param("name");
    const cacheControl = "public, max-age=3600";
    if (name === "init.js") {
      return new Response(INIT_SCRIPT, {
        headers: { "content-type": JS, "cache-control": cacheControl },
      });
    }
    const bytes = packageFile(name);
    if (bytes === undefined) {
      throw new AppError(
        "route-not-found",
        `No API reference asset is named ${name.slice(0, 100)}.`,
      );
    }
    return new Response(await bytes, {
      headers: { "content-type": PACKAGE_FILES.get(name)!.type, "cache-control": cacheControl },
    });
  });
}
