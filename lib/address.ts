import { z } from "zod";

/**
 * An address, defined once. The table below is the only list of its fields; from it come the
 * request and stored schemas (with their OpenAPI documentation), the copies and comparisons, the
 * JSON Merge Patch, the version 1 PUT rule, the stored-shape check, the size estimate and the
 * example. The store, the backup, the routes and the tools use these and never name a field, so a
 * field added here reaches every path (tests/lib/address_fields_test.ts walks them all), and
 * docs/storage.md says when it also needs a new backup format or storage layout version.
 *
 * Every field is a string, trimmed, of at least one character. A required field is in every
 * address; an optional one may be absent (never stored as null or ""): a create or PUT body
 * without it, or with it `null`, stores none (`null` means absent, as in proto3 JSON), a merge
 * patch with `null` removes it.
 */

/** What the table says of one field. */
export interface AddressField {
  /** May be absent; `null` in a merge patch removes it. */
  readonly optional?: boolean;
  /** Most characters after trimming. */
  readonly maxLength: number;
  /**
   * A version 1 PUT of an existing address keeps the stored value (it keeps the name); it
   * replaces every other field with the body's, an absent optional one included.
   */
  readonly keptByV1Put?: boolean;
  /** A check beyond the length: what the server tests, its message, and its JSON Schema form. */
  readonly pattern?: {
    readonly regex: RegExp;
    readonly message: string;
    readonly documented: string;
  };
  readonly description?: string;
  /** A valid value: the OpenAPI example, and what tests and tools send. */
  readonly example: string;
}

/** Letters, digits, spaces and hyphens (any script): the characters of a postal code. */
export const POSTAL_CODE_PATTERN = /^[\p{L}\p{N} -]+$/u;

/**
 * The documented postal code pattern: refuses control characters and ASCII punctuation, the
 * part of POSTAL_CODE_PATTERN every JSON Schema validator can check. `\p{L}` needs Unicode
 * semantics, which many validators and generated clients do not use (Spectral, Python's `re`): to
 * them it is a literal `p{L}` and refuses every postal code. Nothing the server accepts is refused
 * by this pattern (tests/routes/openapi_test.ts); other symbols are refused by the server alone.
 */
export const DOCUMENTED_POSTAL_CODE_PATTERN = "^[^\\x00-\\x1F\\x7F-\\x9F!-,./:-@\\[-`{-~]+$";

/** The fields of an address, in the order they are stored and answered. */
export const ADDRESS_FIELDS = {
  name: { maxLength: 200, keptByV1Put: true, example: "Ada Lovelace" },
  city: { maxLength: 200, example: "London" },
  postalCode: {
    maxLength: 20,
    pattern: {
      regex: POSTAL_CODE_PATTERN,
      message: "may contain only letters, digits, spaces and hyphens",
      documented: DOCUMENTED_POSTAL_CODE_PATTERN,
    },
    description: "Letters and digits of any script, spaces and hyphens; at most 20 characters " +
      "after trimming.",
    example: "W1J 7NT",
  },
} as const satisfies Record<string, AddressField>;

/** A table of address fields: ADDRESS_FIELDS, or one a test builds (`addressSchemas`). */
type AnyTable = Readonly<Record<string, AddressField>>;
type Table = typeof ADDRESS_FIELDS;
/** The name of a field. */
export type AddressFieldName = keyof Table & string;
type OptionalOf<T extends AnyTable> = {
  [K in keyof T & string]: T[K] extends { optional: true } ? K : never;
}[keyof T & string];
type RequiredOf<T extends AnyTable> = Exclude<keyof T & string, OptionalOf<T>>;

/** The table as the code walks it: every entry with every property the interface allows. */
const FIELDS: Readonly<Record<AddressFieldName, AddressField>> = ADDRESS_FIELDS;

/** Every field's name, in the table's order. */
export const ADDRESS_FIELD_NAMES = Object.keys(FIELDS) as readonly AddressFieldName[];
/** The fields every address has. */
export const REQUIRED_FIELD_NAMES = ADDRESS_FIELD_NAMES.filter((name) => !FIELDS[name].optional);
/** The fields an address may lack. */
export const OPTIONAL_FIELD_NAMES = ADDRESS_FIELD_NAMES.filter((name) => FIELDS[name].optional);

/** A field as a request sends it: trimmed, bounded, checked, documented. */
function requestField(field: AddressField) {
  let schema = z.string().trim().min(1).max(field.maxLength);
  if (field.pattern !== undefined) {
    schema = schema.regex(field.pattern.regex, field.pattern.message);
  }
  return schema.meta({
    // Set here: zod-to-openapi would write the regex with its flags (`…$/u`), which is no JSON
    // Schema pattern.
    ...(field.pattern && { pattern: field.pattern.documented }),
    ...(field.description !== undefined && { description: field.description }),
    example: field.example,
  });
}

/**
 * An optional field in a create or replace: absent, `null` (the same: absent, as proto3 JSON
 * reads it; so every style means one thing by it) or a value by the field's rules.
 */
function optionalInputField(field: AddressField) {
  return requestField(field).nullish().transform((value) => value ?? undefined).meta({
    description: `${field.description ?? ""}${field.description ? " " : ""}Optional: ` +
      "`null` means absent, as leaving it out.",
  });
}

/** A shape with one schema per field of `table`: `required`'s of a required one, else `optional`'s. */
function shapeOf<T extends AnyTable, Required extends z.ZodType, Optional extends z.ZodType>(
  table: T,
  required: (field: AddressField) => Required,
  optional: (field: AddressField) => Optional,
): { [K in RequiredOf<T>]: Required } & { [K in OptionalOf<T>]: Optional } {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, field] of Object.entries(table)) {
    shape[name] = field.optional ? optional(field) : required(field);
  }
  return shape as { [K in RequiredOf<T>]: Required } & { [K in OptionalOf<T>]: Optional };
}

/**
 * The schemas of a table's addresses: the body of a create or replace (`null` on an optional
 * field is absent), a stored address, a JSON Merge Patch. The module's own are ADDRESS_FIELDS's;
 * tests build them from other tables (one with an optional field) to check the rules now.
 */
export function addressSchemas<T extends AnyTable>(table: T) {
  return {
    input: z.object(shapeOf(table, requestField, optionalInputField)),
    stored: z.object({
      id: z.number().int().positive().meta({ example: 1 }),
      ...shapeOf(table, () => z.string(), () => z.string().optional()),
    }),
    patch: z.object(
      shapeOf(
        table,
        (field) => requestField(field).optional(),
        (field) => requestField(field).nullable().optional(),
      ),
    ),
  };
}

const SCHEMAS = addressSchemas(ADDRESS_FIELDS);

/**
 * The body of POST /addresses and PUT /addresses/{id}; unknown members are ignored, `null` on an
 * optional field is absent (and 400 `invalid-field` on a required one).
 */
export const AddressInputSchema = SCHEMAS.input.meta({
  id: "AddressInput",
  description: "An address as a create or a replace gives it. Unknown members are ignored; " +
    "`null` on an optional member means absent, as leaving it out, and is 400 `invalid-field` " +
    "on a required one.",
});

/** A stored address. */
export const AddressSchema = SCHEMAS.stored.meta({ id: "Address" });

/**
 * A JSON Merge Patch of an address (RFC 7396): members sent change, unknown members are
 * ignored; `null` removes an optional field and is 400 `invalid-field` on a required one (the
 * schema refuses it).
 */
export const AddressPatchSchema = SCHEMAS.patch.meta({ id: "AddressMergePatch" });

/** An address as a request gives it (without its id). */
export type AddressInput = z.infer<typeof AddressInputSchema>;
/** A stored address. */
export type Address = z.infer<typeof AddressSchema>;
/** A merge patch as validated. */
export type AddressPatch = z.infer<typeof AddressPatchSchema>;

type Fields = Partial<Record<AddressFieldName, string>>;

/** Copies the fields of `from` onto `to` in the table's order, absent optional ones left out. */
function copyFields<T extends object>(from: AddressInput, to: T): T & Fields {
  const out = to as T & Fields;
  for (const name of ADDRESS_FIELD_NAMES) {
    const value = (from as Fields)[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** The fields of `input` alone (nothing else is ever stored). */
export function addressInputOf(input: AddressInput): AddressInput {
  return copyFields(input, {}) as AddressInput;
}

/** The address stored at `id` from an input: its fields alone, in the table's order. */
export function addressAt(id: number, input: AddressInput): Address {
  return copyFields(input, { id }) as Address;
}

/** True when two addresses (or inputs) have the same fields; ids are not compared. */
export function sameAddress(a: AddressInput, b: AddressInput): boolean {
  for (const name of ADDRESS_FIELD_NAMES) {
    if ((a as Fields)[name] !== (b as Fields)[name]) return false;
  }
  return true;
}

/**
 * `current` with a merge patch applied (RFC 7396): a member sent replaces the field, `null`
 * removes it (the schema allows that on optional fields only), an absent member keeps it.
 */
export function mergePatch(current: AddressInput, patch: AddressPatch): AddressInput {
  const out: Fields = {};
  for (const name of ADDRESS_FIELD_NAMES) {
    const sent = (patch as Record<string, string | null | undefined>)[name];
    const value = sent === undefined ? (current as Fields)[name] : sent;
    if (value !== undefined && value !== null) out[name] = value;
  }
  return out as AddressInput;
}

/** Fields a version 1 PUT of an existing address replaces with the body's. */
export const V1_REPLACED = ADDRESS_FIELD_NAMES.filter((name) => !FIELDS[name].keptByV1Put);
/** Fields a version 1 PUT of an existing address keeps as stored. */
export const V1_KEPT = ADDRESS_FIELD_NAMES.filter((name) => FIELDS[name].keptByV1Put);

/** What a version 1 PUT makes of the existing address `current` with the body `input`. */
export function replaceV1(current: Address, input: AddressInput): Address {
  const out: Fields & { id: number } = { id: current.id };
  for (const name of ADDRESS_FIELD_NAMES) {
    const value = ((FIELDS[name].keptByV1Put ? current : input) as Fields)[name];
    if (value !== undefined) out[name] = value;
  }
  return out as Address;
}

/**
 * True when a stored value has an address's shape with this id: every required field a string,
 * every optional one a string or absent. Lengths are not checked: what was stored may predate
 * today's input rules.
 */
export function isStoredAddress(value: unknown, id: unknown): value is Address {
  if (typeof value !== "object" || value === null) return false;
  const a = value as Record<string, unknown>;
  if (a.id !== id) return false;
  for (const name of ADDRESS_FIELD_NAMES) {
    const field = a[name];
    if (typeof field !== "string" && !(field === undefined && FIELDS[name].optional)) return false;
  }
  return true;
}

/**
 * An upper bound of the bytes an address's fields take in a stored value: UTF-16 units × 3 ≥
 * UTF-8 bytes, plus each member's name and framing. The id and the rest of the record are the
 * caller's to add.
 */
export function addressSizeBound(input: AddressInput): number {
  let size = 0;
  for (const name of ADDRESS_FIELD_NAMES) {
    const value = (input as Fields)[name];
    if (value !== undefined) size += value.length * 3 + name.length + 8;
  }
  return size;
}

/**
 * The stored fields with `text` as every field's check (an optional field may be absent): the
 * shape of a backup line's address, whose fields the import then checks by the request rules.
 */
export function storedFieldsShape<T extends z.ZodType>(text: T) {
  return shapeOf(ADDRESS_FIELDS, () => text, () => text.optional());
}

/** An address input in examples and tools: every field's example. */
export const EXAMPLE_INPUT: AddressInput = Object.fromEntries(
  ADDRESS_FIELD_NAMES.map((name) => [name, FIELDS[name].example]),
) as AddressInput;

/** The example input stored at id 1 (OpenAPI examples, docs). */
export const EXAMPLE_ADDRESS: Address = addressAt(1, EXAMPLE_INPUT);

/** `postalCode` → `postal code`: a field's name in prose. */
function words(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => ` ${letter.toLowerCase()}`);
}

/** `a`, `a and b`, `a, b and c`: field names (or, with `prose`, their words) in a sentence. */
export function fieldListText(names: readonly string[], prose = false): string {
  const shown = prose ? names.map(words) : [...names];
  return shown.length <= 1
    ? shown.join("")
    : `${shown.slice(0, -1).join(", ")} and ${shown[shown.length - 1]}`;
}

/** What `null` does in a merge patch, for the API documentation. */
export const MERGE_PATCH_NULL_RULE = OPTIONAL_FIELD_NAMES.length === 0
  ? "`null` (removing a member) is 400 `invalid-field` because every member is required."
  : `\`null\` removes an optional member (${fieldListText(OPTIONAL_FIELD_NAMES)}) and is 400 ` +
    `\`invalid-field\` on a required one (${fieldListText(REQUIRED_FIELD_NAMES)}).`;
