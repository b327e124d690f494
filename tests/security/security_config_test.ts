/** AUTH_*, RATE_LIMIT and CORS_ORIGINS are validated at start-up; the secret is never echoed. */
import assert from "node:assert/strict";
import { jwtVerify } from "jose";
import { ConfigError, loadConfig } from "../../lib/config.ts";
import { runMain, START_PERMISSIONS } from "../support/process.ts";
import { SECRET } from "../support/tokens.ts";

Deno.test("security settings: parsed when valid", () => {
  const config = loadConfig({
    AUTH_JWT_SECRET: SECRET,
    AUTH_ISSUER: "https://issuer.test",
    AUTH_AUDIENCE: "books",
    AUTH_BOOKS: "required",
    RATE_LIMIT: "100/min",
    CORS_ORIGINS: "https://a.example, http://localhost:5173",
  });
  assert.deepEqual(config.auth, {
    secret: SECRET,
    jwksFile: undefined,
    jwksUrl: undefined,
    issuer: "https://issuer.test",
    audience: "books",
    booksRequired: true,
  });
  assert.deepEqual(config.rateLimit, { limit: 100, windowSeconds: 60 });
  assert.deepEqual(config.corsOrigins, ["https://a.example", "http://localhost:5173"]);
  assert.deepEqual(loadConfig({ RATE_LIMIT: "5/h", CORS_ORIGINS: "*" }).rateLimit, {
    limit: 5,
    windowSeconds: 3600,
  });
  const off = loadConfig({});
  assert.equal(off.auth, undefined);
  assert.equal(off.rateLimit, undefined);
  assert.equal(off.corsOrigins, undefined);
});

Deno.test("security settings: a bad value names the variable", () => {
  const cases: [Record<string, string>, RegExp][] = [
    [
      { AUTH_JWT_SECRET: "too-short-secret" },
      /^invalid AUTH_JWT_SECRET: must be at least 32 bytes$/,
    ],
    [{ AUTH_JWKS_URL: "ftp://keys.example/jwks.json" }, /^invalid AUTH_JWKS_URL=/],
    [{ AUTH_BOOKS: "sometimes", AUTH_JWT_SECRET: SECRET }, /^invalid AUTH_BOOKS=/],
    [{ AUTH_BOOKS: "required" }, /^invalid AUTH_BOOKS=required: needs AUTH_JWT_SECRET/],
    [{ AUTH_AUDIENCE: "books" }, /^invalid AUTH_AUDIENCE: needs AUTH_JWT_SECRET/],
    [{ RATE_LIMIT: "100" }, /^invalid RATE_LIMIT="100": must be <n>\/s, <n>\/min or <n>\/h$/],
    [{ RATE_LIMIT: "0/s" }, /^invalid RATE_LIMIT=/],
    [{ RATE_LIMIT: "10/day" }, /^invalid RATE_LIMIT=/],
    [{ CORS_ORIGINS: "https://a.example/path" }, /^invalid CORS_ORIGINS=/],
    [{ CORS_ORIGINS: "a.example" }, /^invalid CORS_ORIGINS=/],
  ];
  for (const [env, message] of cases) {
    assert.throws(() => loadConfig(env), (error: Error) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, message);
      assert.ok(!error.message.includes("too-short-secret"));
      return true;
    }, JSON.stringify(env));
  }
});

Deno.test("a short AUTH_JWT_SECRET stops start-up with one line that does not show it", async () => {
  const { code, stdout, stderr } = await runMain(
    { PORT: "0", GRPC_PORT: "0", AUTH_JWT_SECRET: "hunter2-hunter2" },
    { permissions: START_PERMISSIONS },
  );
  const text = stderr + stdout;
  assert.equal(code, 2);
  assert.equal(text, "invalid AUTH_JWT_SECRET: must be at least 32 bytes\n");
});

Deno.test("deno task token mints a token the server's settings accept", async () => {
  const tool = new URL("../../tools/token.ts", import.meta.url).pathname;
  const run = (args: string[], env: Record<string, string>) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-env", tool, ...args],
      env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
  const env = {
    AUTH_JWT_SECRET: SECRET,
    AUTH_ISSUER: "https://issuer.test",
    AUTH_AUDIENCE: "books",
  };
  const minted = await run(["--sub", "alice", "--scope", "addresses:read", "--ttl", "5m"], env);
  assert.equal(minted.code, 0, new TextDecoder().decode(minted.stderr));
  const token = new TextDecoder().decode(minted.stdout).trim();
  const { payload, protectedHeader } = await jwtVerify(token, new TextEncoder().encode(SECRET), {
    issuer: "https://issuer.test",
    audience: "books",
  });
  assert.equal(protectedHeader.alg, "HS256");
  assert.equal(payload.sub, "alice");
  assert.equal(payload.scope, "addresses:read");
  assert.ok(payload.exp! - payload.iat! === 300);
  const noSecret = await run(["--sub", "alice"], {});
  assert.equal(noSecret.code, 2);
  assert.match(new TextDecoder().decode(noSecret.stderr), /AUTH_JWT_SECRET is not set/);
  const badTtl = await run(["--ttl", "forever"], env);
  assert.equal(badTtl.code, 2);
});

Deno.test("a JWKS needs AUTH_AUDIENCE, a JWKS URL AUTH_ISSUER and https off loopback", () => {
  const refused: [Record<string, string>, RegExp][] = [
    [
      { AUTH_JWKS_FILE: "jwks.json" },
      /^invalid AUTH_AUDIENCE: required with AUTH_JWKS_FILE or AUTH_JWKS_URL/,
    ],
    [
      { AUTH_JWKS_FILE: "jwks.json", AUTH_JWT_SECRET: SECRET, AUTH_ISSUER: "https://idp.test" },
      /^invalid AUTH_AUDIENCE: required with AUTH_JWKS_FILE or AUTH_JWKS_URL/,
    ],
    [
      { AUTH_JWKS_URL: "https://idp.test/jwks.json", AUTH_ISSUER: "https://idp.test" },
      /^invalid AUTH_AUDIENCE: required with AUTH_JWKS_FILE or AUTH_JWKS_URL/,
    ],
    [
      { AUTH_JWKS_URL: "https://idp.test/jwks.json", AUTH_AUDIENCE: "books" },
      /^invalid AUTH_ISSUER: required with AUTH_JWKS_URL$/,
    ],
    ...[
      "http://idp.test/jwks.json",
      "http://10.0.0.1/jwks.json",
      "http://[::2]/jwks.json",
      "http://[::ffff:127.0.0.1]/jwks.json",
      "http://localhost.idp.test/jwks.json",
      "http://127.0.0.1.idp.test/jwks.json",
    ].map((url): [Record<string, string>, RegExp] => [
      { AUTH_JWKS_URL: url, AUTH_AUDIENCE: "books", AUTH_ISSUER: "https://idp.test" },
      /^invalid AUTH_JWKS_URL=".*": must be an https URL \(http only on a loopback host\)$/,
    ]),
  ];
  for (const [env, message] of refused) {
    assert.throws(() => loadConfig(env), (error: Error) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, message);
      assert.ok(!error.message.includes("\n"));
      return true;
    }, JSON.stringify(env));
  }
  const accepted = [
    "https://idp.test/jwks.json",
    "http://127.0.0.1:8080/jwks.json",
    "http://127.9.8.7/jwks.json",
    "http://localhost:3000/jwks.json",
    "http://[::1]:3000/jwks.json",
  ];
  for (const url of accepted) {
    const config = loadConfig({
      AUTH_JWKS_URL: url,
      AUTH_AUDIENCE: "books",
      AUTH_ISSUER: "https://idp.test",
    });
    assert.equal(config.auth?.jwksUrl, url);
  }
  // A secret alone is the server's own: neither audience nor issuer is required.
  assert.equal(loadConfig({ AUTH_JWT_SECRET: SECRET }).auth?.audience, undefined);
  assert.equal(
    loadConfig({ AUTH_JWKS_FILE: "jwks.json", AUTH_AUDIENCE: "books" }).auth?.jwksFile,
    "jwks.json",
  );
});

Deno.test("a JWKS without AUTH_AUDIENCE stops start-up with one line and exit 2", async () => {
  const start = async (env: Record<string, string>) => {
    const { code, stdout, stderr } = await runMain(
      { PORT: "0", GRPC_PORT: "0", HOST: "127.0.0.1", ...env },
      {
        permissions: ["--allow-net", "--allow-env", "--allow-read", "--allow-write"],
        clearEnv: true,
      },
    );
    return { code, text: stderr + stdout };
  };
  const file = await start({ AUTH_JWKS_FILE: "/nonexistent/jwks.json" });
  assert.equal(file.code, 2);
  assert.equal(
    file.text,
    "invalid AUTH_AUDIENCE: required with AUTH_JWKS_FILE or AUTH_JWKS_URL " +
      "(an identity provider signs tokens for many clients)\n",
  );
  const url = await start({ AUTH_JWKS_URL: "https://idp.test/jwks.json", AUTH_AUDIENCE: "b" });
  assert.equal(url.code, 2);
  assert.equal(url.text, "invalid AUTH_ISSUER: required with AUTH_JWKS_URL\n");
  const plain = await start({
    AUTH_JWKS_URL: "http://idp.test/jwks.json",
    AUTH_AUDIENCE: "b",
    AUTH_ISSUER: "https://idp.test",
  });
  assert.equal(plain.code, 2);
  assert.equal(
    plain.text,
    'invalid AUTH_JWKS_URL="http://idp.test/jwks.json": must be an https URL ' +
      "(http only on a loopback host)\n",
  );
});
