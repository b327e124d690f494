import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from "jose";

/** A development secret of the required length (32 bytes). */
export const SECRET = "test-secret-that-is-at-least-32-bytes-long";

/** Signs an HS256 token with `secret` (default SECRET); `exp` one hour ahead unless given. */
export async function hsToken(
  claims: JWTPayload,
  options: { secret?: string; exp?: number | null } = {},
): Promise<string> {
  const jwt = new SignJWT(claims).setProtectedHeader({ alg: "HS256", typ: "JWT" }).setIssuedAt();
  if (options.exp !== null) jwt.setExpirationTime(options.exp ?? "1h");
  return await jwt.sign(new TextEncoder().encode(options.secret ?? SECRET));
}

/** An unsigned token (`alg: none`), as an attacker would send it. */
export function noneToken(claims: JWTPayload): string {
  const b64 = (value: unknown) =>
    btoa(JSON.stringify(value)).replace(/=+$/, "")
      .replace(/\+/g, "-").replace(/\//g, "_");
  const exp = Math.floor(Date.now() / 1000) + 3600;
  return `${b64({ alg: "none", typ: "JWT" })}.${b64({ exp, ...claims })}.`;
}

/** A key pair with its public JWK (with `kid` and `alg`) and a signer. */
interface TestKey {
  alg: string;
  kid: string;
  publicJwk: JWK;
  sign(claims: JWTPayload, exp?: number | string): Promise<string>;
}

/** Generates a key pair for `alg` (RS256, ES256 or EdDSA). */
export async function testKey(alg: string, kid: string): Promise<TestKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: "sig" };
  return {
    alg,
    kid,
    publicJwk,
    sign: (claims, exp = "1h") =>
      new SignJWT(claims).setProtectedHeader({ alg, kid }).setIssuedAt().setExpirationTime(exp)
        .sign(privateKey),
  };
}
