import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { bodyTypesFor } from "../lib/http/body.ts";
import type { AppEnv } from "../lib/http/hono_env.ts";
import { invalidInput } from "../lib/http/invalid_input.ts";
import { admit } from "../security/admission.ts";
import { declared, markerOf } from "../security/access.ts";
import { jsonObjectBody } from "../routes/json_body.ts";

/** A zod schema as far as the operations use it (zod-openapi's `z` is zod 4). */
interface Schema {
  safeParse(value: unknown): { success: true; data: unknown } | {
    success: false;
    error: { issues: { path: PropertyKey[]; message: string }[] };
  };
}

/** A zod object schema: its `shape`, and whether it refuses unknown keys (`catchall`). */
interface ObjectSchema extends Schema {
  shape: Record<string, unknown>;
  _zod: { def: { catchall?: unknown } };
}

type Target = "query" | "param" | "header";

/** One check of an operation's input: where it is read from, and its schema. */
interface Check {
  target: Target;
  schema: Schema;
  read: (c: Context<AppEnv>) => unknown;
}

/**
 * Makes `app.openapi(route, handler)` register each REST operation as one handler that does what
 * the route declares, and no more: it is the route's access declaration (the gate reads it,
 * security/access.ts), sets the caller and request id (security/admission.ts), reads a declared
 * body through the body guard (routes/json_body.ts), checks the declared query, path parameters,
 * headers and body against their schemas in zod-openapi's order (query, param, header, body; the
 * first that fails answers, as lib/http/invalid_input.ts renders it), and runs the handler. The
 * route is documented whole, as zod-openapi documents it.
 *
 * Why, instead of zod-openapi's own registration: it adds the declaration and one validator per
 * part as separate handlers, each `async`, the header validator on a copy of every request
 * header, and a media-type gate the body guard made redundant; with the app's middleware that was
 * about half the CPU of a read by id (docs/bench.md, "Profile summary: REST"). One handler per
 * operation lets Hono call it directly (no middleware chain), synchronously for a route without
 * a body, and every operation, today's and the next one, gets that path without doing anything.
 */
export function leanOperations(app: OpenAPIHono<AppEnv>, options: { maxBodyBytes: number }): void {
  app.openapi = ((route: RouteConfig, handler: MiddlewareHandler<AppEnv>) => {
    const { middleware, hide, ...documented } = route;
    if (!hide) app.openAPIRegistry.registerPath(documented as RouteConfig);
    const chain = middleware === undefined
      ? []
      : Array.isArray(middleware)
      ? middleware
      : [middleware];
    const marker = chain.map(markerOf).find((m) => m !== undefined);
    const others = chain.filter((m) => markerOf(m) === undefined) as MiddlewareHandler<AppEnv>[];
    const operation = operationHandler(route, handler, options.maxBodyBytes);
    const path = route.path.replaceAll(/\/{(.+?)}/g, "/:$1");
    app.on(
      route.method.toUpperCase(),
      [path],
      ...others,
      marker === undefined ? operation : declared(operation, marker.access, marker.refuse),
    );
    return app;
  }) as unknown as typeof app.openapi;
}

/** The one handler of an operation (see `leanOperations`). */
function operationHandler(
  route: RouteConfig,
  handler: MiddlewareHandler<AppEnv>,
  maxBodyBytes: number,
): MiddlewareHandler<AppEnv> {
  const checks = checksOf(route);
  const body = bodySchemaOf(route);
  const method = route.method.toUpperCase();

  function check(c: Context<AppEnv>): void {
    for (const { target, schema, read } of checks) {
      c.req.addValidatedData(target, valid(target, schema, read(c)));
    }
  }

  if (body === undefined) {
    return (c, next) => {
      admit(c);
      check(c);
      return handler(c, next);
    };
  }
  return async (c, next) => {
    admit(c);
    const value = await jsonObjectBody(c.req.raw, method, maxBodyBytes);
    check(c);
    c.req.addValidatedData("json", valid("json", body, value));
    return await handler(c, next);
  };
}

/** The parsed value, or the 400 of the first failed check (what zod-openapi's hook threw). */
function valid(target: Target | "json", schema: Schema, value: unknown): object {
  const result = schema.safeParse(value);
  if (!result.success) throw invalidInput(target, result.error.issues);
  return result.data as object;
}

/**
 * The checks of a route's query, path parameters and headers, reading exactly what zod-openapi's
 * validators read: the query with repeated names as arrays, the decoded path parameters, and the
 * headers the schema names (the validator copied every header, but a schema that does not refuse
 * unknown keys sees only its own: the same result, without the copy).
 */
function checksOf(route: RouteConfig): Check[] {
  const request = route.request;
  const checks: Check[] = [];
  if (request?.cookies) throw new Error(`${route.path}: cookie parameters are not supported`);
  if (request?.query) {
    checks.push({ target: "query", schema: request.query as unknown as Schema, read: queryOf });
  }
  if (request?.params) {
    checks.push({
      target: "param",
      schema: request.params as unknown as Schema,
      read: (c) => c.req.param(),
    });
  }
  if (request?.headers) {
    const schema = request.headers as unknown as ObjectSchema;
    if (schema.shape === undefined || schema._zod?.def.catchall !== undefined) {
      throw new Error(`${route.path}: headers must be a z.object that ignores unknown headers`);
    }
    const names = Object.keys(schema.shape);
    checks.push({
      target: "header",
      schema,
      read: (c) => {
        const headers = c.req.raw.headers;
        const value: Record<string, string> = {};
        for (const name of names) {
          const header = headers.get(name);
          if (header !== null) value[name] = header;
        }
        return value;
      },
    });
  }
  return checks;
}

// As hono/validator builds it (`Object.fromEntries`: a name such as `__proto__` is a plain key).
function queryOf(c: Context<AppEnv>): Record<string, string | string[]> {
  return Object.fromEntries(
    Object.entries(c.req.queries()).map(([name, values]) =>
      values.length === 1 ? [name, values[0]!] : [name, values]
    ),
  );
}

/**
 * The schema of a route's JSON body, or undefined without a body. Its media types must be the
 * ones the body guard takes for the method (lib/http/body.ts), each named with the same schema
 * (or a reference to it, routes/json_body.ts `byReference`), and the body required.
 */
function bodySchemaOf(route: RouteConfig): Schema | undefined {
  const body = route.request?.body;
  if (body === undefined) return undefined;
  const method = route.method.toUpperCase();
  const declared = Object.keys(body.content).sort();
  const taken = [...bodyTypesFor(method) ?? []].sort();
  if (body.required !== true || declared.join() !== taken.join()) {
    throw new Error(
      `${method} ${route.path}: a body must be required and of the types ${taken.join(", ")}`,
    );
  }
  const schemas = new Set(
    Object.values(body.content).map((entry) => (entry as { schema?: unknown })?.schema)
      .filter(isSchema),
  );
  if (schemas.size !== 1) throw new Error(`${method} ${route.path}: one body schema expected`);
  return [...schemas][0]!;
}

function isSchema(value: unknown): value is Schema {
  return typeof (value as Schema | undefined)?.safeParse === "function";
}
