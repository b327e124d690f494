import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../lib/http/hono_env.ts";
import { GATE_RESPONSES } from "../lib/http/openapi.ts";
import { apiReferenceRoutes } from "./api_reference.ts";
import { requires, securityOf } from "../security/access.ts";
import { DOCS_PATH, ERRORS_DOC_PATH, OPENAPI_PATH } from "../lib/paths.ts";

const ERRORS_DOC = new URL("../docs/errors.md", import.meta.url);
let errorsDoc: Uint8Array<ArrayBuffer> | undefined;

/**
 * Serves the documentation: the API reference page (`/docs`) and the error-code reference that
 * every error's `help` link points to (`/docs/errors`).
 */
export function docsRoutes(app: OpenAPIHono<AppEnv>): void {
  documentDocs(app);
  apiReferenceRoutes(app);
  app.get(ERRORS_DOC_PATH, requires("public"), async () => {
    errorsDoc ??= await Deno.readFile(ERRORS_DOC);
    return new Response(errorsDoc, {
      headers: { "content-type": "text/markdown; charset=utf-8" },
    });
  });
}

const text = (type: string, description: string) => ({
  description,
  content: { [type]: { schema: { type: "string" as const } } },
});

/**
 * Documents the documentation itself, so that the links of the entry point are operations of
 * the document too. `/openapi.json` is served by the app (server/app.ts); its assets are not listed.
 */
function documentDocs(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerPath({
    method: "get",
    path: OPENAPI_PATH,
    operationId: "getOpenApiDocument",
    security: securityOf("public"),
    tags: ["service"],
    summary: "This OpenAPI 3.1 document",
    description: "The description of the REST API that clients are generated from (JSON Schema " +
      "2020-12 schemas).",
    responses: {
      200: {
        description: "The OpenAPI document",
        content: { "application/json": { schema: { type: "object" } } },
      },
      ...GATE_RESPONSES,
    },
  });
  app.openAPIRegistry.registerPath({
    method: "get",
    path: DOCS_PATH,
    operationId: "getApiReference",
    security: securityOf("public"),
    tags: ["service"],
    summary: "Interactive API reference (Swagger UI)",
    description: "An HTML page rendering `/openapi.json`; every asset is served by this server.",
    responses: { 200: text("text/html", "The page"), ...GATE_RESPONSES },
  });
  app.openAPIRegistry.registerPath({
    method: "get",
    path: ERRORS_DOC_PATH,
    operationId: "getErrorReference",
    security: securityOf("public"),
    tags: ["service"],
    summary: "The error-code reference",
    description: "Markdown with one entry per error code; the `help` link of every error points " +
      "at its entry.",
    responses: { 200: text("text/markdown", "The reference"), ...GATE_RESPONSES },
  });
}
