import { z } from "zod";
import { type Address, addressAt, storedFieldsShape } from "../../lib/address.ts";
import { MAX_ID } from "../addresses/keys.ts";

/**
 * The backup file (docs/operations.md): NDJSON, one JSON object per line.
 *
 *   {"format":"books-addresses","version":1,"source":"data/kv.sqlite3","layout":2,"exportedAt":"…"}
 *   {"kind":"address","owner":"alice","address":{"id":1,"name":"…",…}}
 *   …
 *   {"kind":"counters","addressId":1234}
 *   {"kind":"end","addresses":1200}
 *
 * The end line makes a cut-off file detectable; `counters` is the id counter when the listing
 * ended, so no id handed out before the export (even one deleted since) is handed out again.
 */
export const BACKUP_FORMAT = "books-addresses";

/** The format version this code writes and reads. */
export const BACKUP_VERSION = 1;

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

/** One address with its owner. */
export interface AddressLine {
  kind: "address";
  owner: string;
  address: Address;
}

/** A body line as parsed. */
type BackupLine = AddressLine | { kind: "counters"; addressId: number } | {
  kind: "end";
  addresses: number;
};

const HeaderSchema = z.object({
  format: z.string(),
  version: z.number().int().positive(),
  source: z.string().max(2000).optional(),
  layout: z.number().int().nullable().optional(),
  exportedAt: z.string().max(100).optional(),
});

// A backup keeps what was stored, which may predate today's input rules: the shape is checked,
// and lengths only as far as one KV value allows. An address member this version does not know
// refuses the line: the file comes from a version with another field, which importing it here
// would silently drop (docs/storage.md, "Changing an address's fields").
const text = z.string().max(2000);

const LineSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("address"),
    owner: z.string().max(512).refine((s) => s.isWellFormed(), "must be well-formed Unicode"),
    address: z.strictObject({
      id: z.number().int().positive().max(MAX_ID),
      ...storedFieldsShape(text),
    }),
  }),
  z.object({ kind: z.literal("counters"), addressId: z.number().int().min(0).max(MAX_ID) }),
  z.object({ kind: z.literal("end"), addresses: z.number().int().min(0) }),
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

/** Parses a body line. */
export function parseLine(text: string, line: number): BackupLine {
  const parsed = LineSchema.safeParse(parseJson(text, line));
  if (!parsed.success) throw new BackupLineError(line, issueText(parsed.error));
  return parsed.data;
}

/** The text of a header line. */
export function headerLine(header: BackupHeader): string {
  return JSON.stringify(header);
}

/** The text of an address line. */
export function addressLine(owner: string, address: Address): string {
  return JSON.stringify({ kind: "address", owner, address: addressAt(address.id, address) });
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
