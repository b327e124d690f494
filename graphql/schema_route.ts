import { type GraphQLSchema, printSchema } from "graphql";
import type { Hono } from "hono";
import type { GraphqlConfig } from "../lib/config.ts";
import { AppError } from "../lib/errors.ts";
import type { AppEnv } from "../lib/http/hono_env.ts";
import { GRAPHQL_SCHEMA_PATH } from "../lib/paths.ts";
import { requires } from "../security/access.ts";

/** The SDL's media type: no GraphQL SDL type is registered, and plain text reads everywhere. */
export const SDL_CONTENT_TYPE = "text/plain; charset=utf-8";

/**
 * Serves the schema as SDL at `/graphql/schema.graphql`, printed from the executable schema
 * (graphql-js `printSchema`), so it is what the endpoint runs, descriptions included. Public like
 * `/openapi.json`. It tells what introspection would, so with `GRAPHQL_INTROSPECTION=false` it is
 * 404 `route-not-found`, as if it did not exist.
 */
export function schemaRoute(app: Hono<AppEnv>, schema: GraphQLSchema, config: GraphqlConfig) {
  const sdl = config.introspection ? `${printSchema(schema)}\n` : undefined;
  app.get(GRAPHQL_SCHEMA_PATH, requires("public"), () => {
    if (sdl === undefined) {
      throw new AppError(
        "route-not-found",
        `${GRAPHQL_SCHEMA_PATH} is not served while GRAPHQL_INTROSPECTION=false.`,
      );
    }
    return new Response(sdl, { headers: { "content-type": SDL_CONTENT_TYPE } });
  });
}
