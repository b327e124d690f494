/**
 * `deno task token`: mints a development token for the server's `AUTH_JWT_SECRET`.
 *
 *   deno task token --sub alice --scope "addresses:read addresses:write" --ttl 1h
 *
 * Prints the token only, so it composes: `TOKEN=$(deno task token --sub alice)`. Uses
 * AUTH_ISSUER and AUTH_AUDIENCE when set, as the server checks them.
 */
import { parseArgs } from "node:util";
import { SignJWT } from "jose";
import { ConfigError, loadConfig } from "../lib/config.ts";

const USAGE = "usage: deno task token [--sub <subject>] [--scope <scopes>] [--ttl <duration>]";
const DEFAULT_SCOPE = "addresses:read addresses:write books:read";

function fail(message: string): never {
  console.error(message);
  Deno.exit(2);
}

if (import.meta.main) {
  let values;
  try {
    ({ values } = parseArgs({
      args: Deno.args,
      options: {
        sub: { type: "string", default: "dev" },
        scope: { type: "string", default: DEFAULT_SCOPE },
        ttl: { type: "string", default: "1h" },
        help: { type: "boolean", default: false },
      },
    }));
  } catch (error) {
    fail(`${(error as Error).message}\n${USAGE}`);
  }
  if (values.help) {
    console.log(USAGE);
    Deno.exit(0);
  }
  let auth;
  try {
    auth = loadConfig(Deno.env.toObject()).auth;
  } catch (error) {
    fail(error instanceof ConfigError ? error.message : String(error));
  }
  if (auth?.secret === undefined) fail("AUTH_JWT_SECRET is not set: tokens are signed with it.");
  if (!/^[0-9]+ ?(s|m|h|d)$/.test(values.ttl)) fail(`invalid --ttl ${values.ttl}: e.g. 30m, 1h`);
  if (values.sub === "") fail("invalid --sub: must not be empty");
  const jwt = new SignJWT({ scope: values.scope })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(values.sub)
    .setIssuedAt()
    .setExpirationTime(values.ttl);
  if (auth.issuer) jwt.setIssuer(auth.issuer);
  if (auth.audience) jwt.setAudience(auth.audience);
  console.log(await jwt.sign(new TextEncoder().encode(auth.secret)));
}
