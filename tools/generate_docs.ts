/**
 * Writes the passages of the README and docs/http.md that depend on an address's fields from the
 * one definition (`ADDRESS_FIELDS` in lib/address.ts), so a field added there changes them
 * (part of `deno task generate`); with `--check`, fails when a committed file differs from what
 * it would write (part of `deno task check`, and tests/docs_fields_test.ts). A passage sits
 * between `<!--address:NAME-->` and `<!--/address-->`; the files are then formatted by `deno fmt`,
 * as `deno task check` wants them.
 */
import {
  ADDRESS_FIELD_NAMES,
  ADDRESS_FIELDS,
  type AddressField,
  type AddressFieldName,
  EXAMPLE_ADDRESS,
  fieldListText,
  MERGE_PATCH_NULL_RULE,
  OPTIONAL_FIELD_NAMES,
  REQUIRED_FIELD_NAMES,
  V1_KEPT,
  V1_REPLACED,
} from "../lib/address.ts";

const ROOT = new URL("../", import.meta.url);

/** The files with passages, from the repository's root. */
export const DOCUMENTS = ["README.md", "docs/http.md"];

const FIELDS: Readonly<Record<AddressFieldName, AddressField>> = ADDRESS_FIELDS;

/**
 * A passage: `word<!--address:NAME--> text<!--/address-->`, its text across lines as `deno fmt`
 * wraps it. The start is glued to the word before it: a comment that began a line would begin an
 * HTML block, which ends the paragraph, and glued, `deno fmt` never moves it to a line's start.
 */
const PASSAGE = /(?<=\S)<!--address:([a-z0-9-]+)-->\s[\s\S]*?<!--\/address-->/g;
const START = /<!--address:/g;

/** `name`, `city` and `postalCode`: field names as code in a sentence. */
function code(names: readonly string[]): string {
  return fieldListText(names.map((name) => `\`${name}\``));
}

function isAre(names: readonly string[]): string {
  return names.length === 1 ? "is" : "are";
}

/** Which fields are required, and each field's bounds and pattern. */
function rulesText(): string {
  const presence = OPTIONAL_FIELD_NAMES.length === 0
    ? "Fields are required strings, trimmed, non-empty"
    : `Fields are strings, trimmed, non-empty; ${code(REQUIRED_FIELD_NAMES)} ` +
      `${isAre(REQUIRED_FIELD_NAMES)} required, ${code(OPTIONAL_FIELD_NAMES)} optional (left ` +
      'out when absent, never `""`)';
  // Fields without a pattern grouped by their bound, in the table's order.
  const bounds = new Map<number, AddressFieldName[]>();
  const limits: string[] = [];
  for (const name of ADDRESS_FIELD_NAMES) {
    const { maxLength, pattern } = FIELDS[name];
    if (pattern !== undefined) continue;
    bounds.set(maxLength, [...bounds.get(maxLength) ?? [], name]);
  }
  for (const [max, names] of bounds) limits.push(`${code(names)} at most ${max} characters`);
  for (const name of ADDRESS_FIELD_NAMES) {
    const { maxLength, pattern } = FIELDS[name];
    if (pattern === undefined) continue;
    limits.push(`${code([name])} at most ${maxLength} characters, which ${pattern.message}`);
  }
  return `${presence}; ${limits.join("; ")}.`;
}

/** Rule 1 of a version 1 PUT, after "When an address with `{id}` exists, ". */
function v1PutText(): string {
  const optional = V1_REPLACED.filter((name) => FIELDS[name].optional);
  const removed = optional.length === 0
    ? ""
    : ` (${code(optional)}, optional, removed when the body leaves ${
      optional.length === 1 ? "it" : "them"
    } out)`;
  const kept = V1_KEPT.length === 0
    ? ""
    : `; its ${code(V1_KEPT)} ${isAre(V1_KEPT)} not copied and ${
      V1_KEPT.length === 1 ? "stays as it was" : "stay as they were"
    }`;
  return `its ${code(V1_REPLACED)} ${isAre(V1_REPLACED)} set from the body${removed} and it is ` +
    `saved${kept}`;
}

/** What "the same body" of an Idempotency-Key's replay compares. */
function sameBodyText(): string {
  const optional = OPTIONAL_FIELD_NAMES.length === 0
    ? ""
    : `, ${code(OPTIONAL_FIELD_NAMES)} absent in both or the same`;
  return `same ${code(ADDRESS_FIELD_NAMES)} after trimming${optional}`;
}

/** Every passage's text by its name, from the table as it is now. */
export function passages(): Map<string, string> {
  return new Map([
    ["example", `\`${JSON.stringify(EXAMPLE_ADDRESS)}\``],
    ["rules", rulesText()],
    ["v1-put", v1PutText()],
    ["v1-replaced", code(V1_REPLACED)],
    ["v1-kept", code(V1_KEPT)],
    ["merge-patch-null", MERGE_PATCH_NULL_RULE.replace(/\.$/, "")],
    ["same-body", sameBodyText()],
  ]);
}

/** The names of the passages a document has, in its order. */
export function passageNames(text: string): string[] {
  return [...text.matchAll(PASSAGE)].map((match) => match[1]!);
}

/**
 * `text` with every passage's text put in, unformatted; an unknown name, or a start not glued to
 * a word, is an error.
 */
function filled(text: string, file: string, texts: Map<string, string>): string {
  const starts = text.match(START)?.length ?? 0;
  if (passageNames(text).length !== starts) {
    throw new Error(`${file}: a <!--address:…--> without its end, or not glued to the word before`);
  }
  return text.replace(PASSAGE, (_, name: string) => {
    const passage = texts.get(name);
    if (passage === undefined) throw new Error(`${file}: no passage is named "${name}"`);
    return `<!--address:${name}--> ${passage}<!--/address-->`;
  });
}

/** Markdown as `deno fmt` writes it with the project's settings (deno.json). */
async function formatted(text: string): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext", "md", "-"],
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const out = await child.output();
  if (!out.success) throw new Error(`deno fmt: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}

/** Each document as the generator writes it (path from the root → text). */
export async function generatedDocs(): Promise<Map<string, string>> {
  const texts = passages();
  const out = new Map<string, string>();
  for (const file of DOCUMENTS) {
    const text = await Deno.readTextFile(new URL(file, ROOT));
    out.set(file, await formatted(filled(text, file, texts)));
  }
  return out;
}

/** The documents whose committed text is not what the generator writes. */
export async function staleDocs(): Promise<string[]> {
  const stale: string[] = [];
  for (const [file, text] of await generatedDocs()) {
    if (await Deno.readTextFile(new URL(file, ROOT)) !== text) stale.push(file);
  }
  return stale;
}

if (import.meta.main) {
  if (Deno.args.includes("--check")) {
    const stale = await staleDocs();
    if (stale.length > 0) {
      console.error(
        `${stale.join(", ")}: the passages about an address's fields differ from ` +
          "lib/address.ts; run `deno task generate` and commit",
      );
      Deno.exit(1);
    }
    console.log(`${DOCUMENTS.join(", ")}: the address passages are up to date`);
  } else {
    for (const [file, text] of await generatedDocs()) {
      const url = new URL(file, ROOT);
      if (await Deno.readTextFile(url) !== text) await Deno.writeTextFile(url, text);
    }
  }
}
