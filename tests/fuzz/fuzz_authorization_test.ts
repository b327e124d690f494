/**
 * Property-based fuzzing of how the `Authorization` field is read (docs/security.md): lists of
 * field lines (none, one, repeats) in other spellings (whitespace before, after and inside, the
 * scheme's case, empty values, commas, a token of another caller or none at all), sent byte for
 * byte through every door of both ports (tests/support/field_doors.ts). Whatever is sent:
 * - every HTTP/2 door (the HTTP port's and the gRPC port's, every framing) gives the same answer:
 *   the caller the one well-formed line names, or the same refusal with the same message;
 * - HTTP/1.1 gives the answer HTTP/2 gives for the lines with their surrounding whitespace taken
 *   off (RFC 9112: it is not part of a field value there);
 * - a request is admitted only as the caller of its one line, when that line is exactly
 *   `Bearer <token>`.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { fuzz } from "../support/fuzz.ts";
import { type DoorAnswer, FIELD_DOORS, sendThrough } from "../support/field_doors.ts";
import { addressBook } from "../support/requests.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

const CALLERS = ["Alice", "Bob"] as const;
const WHITESPACE = fc.constantFrom("", "", " ", "\t", "  ", " \t");

/** One field line: [before, scheme, between, credential, after, then a stray suffix]. */
const line = fc.tuple(
  WHITESPACE,
  fc.constantFrom("Bearer", "Bearer", "bearer", "BEARER", "Basic", ""),
  fc.constantFrom(" ", " ", "  ", "\t", ""),
  fc.constantFrom("Alice", "Alice", "Bob", "garbage", "", "a.b.c"),
  WHITESPACE,
  fc.constantFrom("", "", "", ",", ", Bearer x"),
);

function describe(answer: DoorAnswer): string {
  if (!answer.ok) return `refused ${answer.message}`;
  const who = CALLERS.filter((name) => answer.body.includes(name));
  return `admitted as ${who.join("+") || "nobody"}`;
}

Deno.test("authorization fuzz: the field's lines read alike through every door of both ports", async () => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET });
  const urls = { httpUrl: server.httpUrl, grpcUrl: server.grpcUrl! };
  const tokens = new Map<string, string>();
  for (const name of CALLERS) {
    const token = await hsToken({ sub: name, scope: "addresses:read addresses:write" });
    tokens.set(name, token);
    const res = await addressBook(server.httpUrl, { authorization: `Bearer ${token}` }).create({
      name,
      city: "London",
      postalCode: "W1J 7NT",
    });
    assert.equal(res.status, 201);
  }
  const spell = ([before, scheme, between, credential, after, suffix]: readonly string[]) =>
    [before, scheme, between, tokens.get(credential!) ?? credential, after, suffix].join("");
  const trimmed = (value: string) => value.replace(/^[ \t]+|[ \t]+$/g, "");
  // Answers by the lines as the server reads them, across cases: the same lines, the same answer.
  const byLines = new Map<string, string>();
  try {
    await fuzz("authorization", 40, fc.array(line, { maxLength: 3 }), async (spelled) => {
      const lines = spelled.map(spell);
      for (const door of FIELD_DOORS) {
        const res = await sendThrough(urls, door, lines.map((v) => ["authorization", v]));
        const answer = describe(door.read(res.status, res.fields, res.body));
        const read = door.via === "http1" ? lines.map(trimmed) : lines;
        const key = JSON.stringify(read);
        const where = `${door.via} ${door.name} ${JSON.stringify(spelled)}`;
        const earlier = byLines.get(key);
        if (earlier === undefined) byLines.set(key, answer);
        else assert.equal(answer, earlier, where);
        // The one line, exactly `Bearer <token>` (any case of the scheme), names who is admitted.
        const only = read.length === 1 ? /^bearer +([A-Za-z0-9._-]+)$/i.exec(read[0]!) : null;
        const caller = CALLERS.find((name) => tokens.get(name) === only?.[1]);
        assert.equal(answer.startsWith("admitted"), caller !== undefined, `${where}: ${answer}`);
        if (caller !== undefined) assert.equal(answer, `admitted as ${caller}`, where);
      }
    });
  } finally {
    await server.close();
  }
});
