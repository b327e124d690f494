import { z } from "zod";
import {
  type Address,
  ADDRESS_FIELD_NAMES,
  ADDRESS_FIELDS,
  addressAt,
  type AddressField,
  addressInputOf,
  AddressInputSchema,
  storedFieldsShape,
} from "../../lib/address.ts";
import { MAX_ID } from "../addresses/keys.ts";
import { IdempotencyKeySchema } from "../../lib/idempotency_key.ts";

/**
 * The backup file (docs/operations.md): NDJSON, one JSON object per line.
 *
 *   {"format":"books-addresses","version":2,"source":"data/kv.sqlite3","layout":4,"exportedAt":"…"}
 *   {"kind":"address","owner":"alice","address":{"id":1,"name":"…",…},"key":"k-1"}
 *   …
 *   {"kind":"idempotency","owner":"alice","key":"k-1","address":{"id":1,…},"etag":"\"…\"","expiresAt":1767225600000}
 *   …
 *   {"kind":"counters","addressId":1234}
 *   {"kind":"end","addresses":1200,"idempotency":17}
 *
 * The end line makes a cut-off file detectable; `counters` is the id counter when the listing
 * ended, so no id handed out before the export (even one deleted since) is handed out again.
 * Idempotency lines (version 2) are the Idempotency-Key records that still replay, each with
 * when it stops (ms since the epoch), so a retry after a restore replays instead of creating
 * again; an address line's `key` names the key that created it.
 */
export const BACKUP_FORMAT = "books-addresses";

/**
 * The format version this code writes; it reads this one and every older one. 2: idempotency
 * lines, an address line's `key`, the end line's `idempotency` count (a version 1 file has none
 * of them, and imports as before).
 */
export const BACKUP_VERSION = 2;

/** The first line. */
export interface BackupHeader {
  format: typeof BACKUP_FORMAT;
  version: number;
  /** Which KV it came from (a file path, `remote` or `platform`: never a URL). */
  source: string;
  /** The storage layout of the source. */
  layout: number | null;
  exportedAt: string;
}

/** One address with its owner (and the Idempotency-Key that created it, if any). */
export interface AddressLine {
  kind: "address";
  owner: string;
  address: Address;
  key?: string | undefined;
}

/** One Idempotency-Key record that still replays (store/addresses/keys.ts IdempotencyRecord). */
export interface IdempotencyLine {
  kind: "idempotency";
  owner: string;
  key: string;
  address: Address;
  etag: string;
  /** When it stops replaying, ms since the epoch. */
  expiresAt: number;
  /** Its address was deleted: it counts toward the owner's quota until it expires. */
  orphan?: boolean | undefined;
}

/** A body line as parsed. */
type BackupLine = AddressLine | IdempotencyLine | { kind: "counters"; addressId: number } | {
  kind: "end";
  addresses: number;
  idempotency?: number | undefined;
};

const HeaderSchema = z.object({
  format: z.string(),
  version: z.number().int().positive(),
  source: z.string().max(2000).optional(),
  layout: z.number().int().nullable().optional(),
  exportedAt: z.string().max(100).optional(),
});

// The shape first (every field a string, an optional one a string or absent), then each field by
// the API's rules (addressRuleProblem). An address member this version does not know refuses the
// line: the file comes from a version with another field, which importing it here would silently
// drop (docs/storage.md, "Changing an address's fields").
const OwnerSchema = z.string().max(512).refine(
  (s) => s.isWellFormed(),
  "must be well-formed Unicode",
);
const StoredAddressSchema = z.strictObject({
  id: z.number().int().positive().max(MAX_ID),
  ...storedFieldsShape(z.string()),
});
const LineSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("address"),
    owner: OwnerSchema,
    address: StoredAddressSchema,
    key: IdempotencyKeySchema.optional(),
  }),
  z.object({
    kind: z.literal("idempotency"),
    owner: OwnerSchema,
    key: IdempotencyKeySchema,
    address: StoredAddressSchema,
    etag: z.string().regex(/^"[\x21\x23-\x7e]{1,200}"$/, "must be a quoted strong ETag"),
    expiresAt: z.number().int().positive(),
    orphan: z.boolean().optional(),
  }),
  z.object({ kind: z.literal("counters"), addressId: z.number().int().min(0).max(MAX_ID) }),
  z.object({
    kind: z.literal("end"),
    addresses: z.number().int().min(0),
    idempotency: z.number().int().min(0).optional(),
  }),
]);

/** A line that is not what the format allows there; the message names the line. */
export class BackupLineError extends Error {
  override name = "BackupLineError";
  constructor(readonly line: number, reason: string) {
    super(`line ${line}: ${reason}`);
  }
}

function parseJson(text: string, line: number): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new BackupLineError(line, `not JSON (${(error as Error).message.slice(0, 120)})`);
  }
}

function issueText(error: z.ZodError): string {
  const issue = error.issues[0]!;
  const path = issue.path.join(".");
  return path ? `${path} ${issue.message}` : issue.message;
}

/** Parses line 1; a file of another format or a newer version is refused. */
export function parseHeader(text: string): BackupHeader {
  const parsed = HeaderSchema.safeParse(parseJson(text, 1));
  if (!parsed.success || parsed.data.format !== BACKUP_FORMAT) {
    throw new BackupLineError(1, `not the header of an address export (format ${BACKUP_FORMAT})`);
  }
  if (parsed.data.version > BACKUP_VERSION) {
    throw new BackupLineError(
      1,
      `format version ${parsed.data.version} is newer than this tool reads (${BACKUP_VERSION})`,
    );
  }
  const { version, source, layout, exportedAt } = parsed.data;
  return {
    format: BACKUP_FORMAT,
    version,
    source: source ?? "unknown",
    layout: layout ?? null,
    exportedAt: exportedAt ?? "unknown",
  };
}

/**
 * Why an address is not one the API would store (undefined: it is). Each field is checked by the
 * API's own schema (lib/address.ts: trimmed, not empty, its length, its pattern; an optional field
 * absent, never ""), and must be as the API stores it: trimming leaves it unchanged. So an import
 * writes only what a create could have stored, and serves nothing the API would refuse.
 */
export function addressRuleProblem(address: Address): string | undefined {
  const fields = addressInputOf(address) as Record<string, string | undefined>;
  const parsed = AddressInputSchema.safeParse(fields);
  const problems: string[] = [];
  if (!parsed.success) {
    const named = new Set<string>();
    for (const issue of parsed.error.issues) {
      const name = String(issue.path[0]);
      if (named.has(name)) continue;
      named.add(name);
      const field = (ADDRESS_FIELDS as Record<string, AddressField>)[name];
      problems.push(
        field?.optional && fields[name]?.trim() === ""
          ? `address.${name} is ${JSON.stringify(fields[name])}: an optional field is left out ` +
            "when absent, never stored empty"
          : `address.${name}: ${issue.message} (the API's rule)`,
      );
    }
  } else {
    const stored = parsed.data as Record<string, string | undefined>;
    for (const name of ADDRESS_FIELD_NAMES) {
      if (stored[name] !== fields[name]) {
        problems.push(`address.${name} has white space at an end: the API stores it trimmed`);
      }
    }
  }
  return problems.length === 0 ? undefined : problems.join("; ");
}

/** Parses a body line; an address must also pass the API's rules (addressRuleProblem). */
export function parseLine(text: string, line: number): BackupLine {
  const parsed = LineSchema.safeParse(parseJson(text, line));
  if (!parsed.success) throw new BackupLineError(line, issueText(parsed.error));
  if (parsed.data.kind === "address" || parsed.data.kind === "idempotency") {
    const problem = addressRuleProblem(parsed.data.address);
    if (problem !== undefined) throw new BackupLineError(line, problem);
  }
  return parsed.data;
}

/** The text of a header line. */
export function headerLine(header: BackupHeader): string {
  return JSON.stringify(header);
}

/** The text of an address line. */
export function addressLine(owner: string, address: Address, key?: string): string {
  return JSON.stringify({
    kind: "address",
    owner,
    address: addressAt(address.id, address),
    ...(key !== undefined && { key }),
  });
}

/** The text of an idempotency line. */
export function idempotencyLine(line: Omit<IdempotencyLine, "kind">): string {
  const { owner, key, address, etag, expiresAt, orphan } = line;
  return JSON.stringify({
    kind: "idempotency",
    owner,
    key,
    address: addressAt(address.id, address),
    etag,
    expiresAt,
    ...(orphan && { orphan: true }),
  });
}

/** Splits a byte stream into lines (without `\n` or `\r\n`), numbered from 1. */
export async function* readLines(
  stream: ReadableStream<Uint8Array>,
): AsyncGenerator<{ line: number; text: string }, void, undefined> {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let buffered = "";
  let line = 0;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      let chunk: string;
      try {
        chunk = done ? decoder.decode() : decoder.decode(value, { stream: true });
      } catch {
        throw new BackupLineError(line + 1, "not UTF-8");
      }
      buffered += chunk;
      let start = 0;
      let at: number;
      while ((at = buffered.indexOf("\n", start)) >= 0) {
        const text = buffered.slice(start, at);
        start = at + 1;
        yield { line: ++line, text: text.endsWith("\r") ? text.slice(0, -1) : text };
      }
      buffered = buffered.slice(start);
      if (done) break;
    }
    if (buffered !== "") yield { line: ++line, text: buffered };
  } finally {
    reader.releaseLock();
  }
}
