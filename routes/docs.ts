import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../lib/app_env.ts";
import { apiReferenceRoutes } from "./api_reference.ts";
import { requires } from "../lib/access.ts";

const ERRORS_DOC = new URL("../docs/errors.md", import.meta.url);
let errorsDoc: Uint8Array<ArrayBuffer> | undefined;

/**
 * Serves the documentation: the API reference page (`/docs`) and the error-code reference that
 * every error's `help` link points to (`/docs/errors`).
 */
export function docsRoutes(app: OpenAPIHono<AppEnv>): void {
  apiReferenceRoutes(app);
  app.get("/docs/errors", requires("public"), async () => {
    errorsDoc ??= await Deno.readFile(ERRORS_DOC);
    return new Response(errorsDoc, {
      headers: { "content-type": "text/markdown; charset=utf-8" },
    });
  });
}
