import { ConfigError } from "../../lib/config_error.ts";
import { AppError } from "../../lib/errors.ts";
import { withKvRetry } from "../kv/retry.ts";

/**
 * The KV layout version (docs/operations.md, "Storage layouts").
 * `["meta", "layout"]` → `LayoutValue`.
 *
 * A KV without that key is unversioned: when it holds no key at all it is fresh and is
 * initialised at `CURRENT_LAYOUT` (no migration); when it holds any key it was written by a
 * version before layouts were numbered, and is layout 1.
 */
export const LAYOUT_KEY: Deno.KvKey = ["meta", "layout"];

/** A migration's progress: `["meta", "migration"]` → `MigrationProgress` while one runs. */
export const MIGRATION_KEY: Deno.KvKey = ["meta", "migration"];

/** The layout this code reads and writes. */
export const CURRENT_LAYOUT = 5;

/** The value of the layout key. */
export interface LayoutValue {
  version: number;
  /** Set while a migration to this layout runs (or was interrupted). */
  migratingTo?: number;
}

/** What the layout key says, or what an unversioned KV is. */
export interface LayoutState {
  entry: Deno.KvEntryMaybe<LayoutValue>;
  /** null: unversioned and empty (fresh). */
  version: number | null;
  migratingTo: number | undefined;
}

/** A KV this version cannot serve as it is; the message is the one line start-up prints. */
export class LayoutError extends ConfigError {
  override name = "LayoutError";
}

function isLayoutValue(value: unknown): value is LayoutValue {
  const v = value as LayoutValue;
  return typeof v === "object" && v !== null && Number.isSafeInteger(v.version) &&
    v.version >= 1 && (v.migratingTo === undefined || Number.isSafeInteger(v.migratingTo));
}

/** True when the KV holds no key at all. */
async function isEmpty(kv: Deno.Kv): Promise<boolean> {
  return await withKvRetry(async () => {
    for await (const _ of kv.list({ prefix: [] }, { limit: 1 })) return false;
    return true;
  });
}

/** Reads the layout key; an unversioned KV is layout 1, or fresh (null) when empty. */
export async function readLayout(kv: Deno.Kv, label: string): Promise<LayoutState> {
  let entry = await withKvRetry(() => kv.get<LayoutValue>(LAYOUT_KEY));
  if (entry.value === null) {
    const empty = await isEmpty(kv);
    // Read again after the listing: a process that initialised the KV in between (and seeded
    // it, so it is not empty now) wrote the layout key before any other key.
    entry = await withKvRetry(() => kv.get<LayoutValue>(LAYOUT_KEY));
    if (entry.value === null) return { entry, version: empty ? null : 1, migratingTo: undefined };
  }
  if (!isLayoutValue(entry.value)) {
    throw new LayoutError(`the KV (${label}) has a layout key this version does not recognise`);
  }
  return { entry, version: entry.value.version, migratingTo: entry.value.migratingTo };
}

/**
 * Marks a fresh KV as the current layout. Checked absent, so of several processes starting
 * together on an empty KV one writes it and the others read it. True when this one wrote it.
 */
export async function initialiseLayout(
  kv: Deno.Kv,
  entry: Deno.KvEntryMaybe<LayoutValue>,
): Promise<boolean> {
  const value: LayoutValue = { version: CURRENT_LAYOUT };
  const result = await withKvRetry(() => kv.atomic().check(entry).set(LAYOUT_KEY, value).commit());
  return result.ok;
}

/** The error for a KV newer than this code. */
export function newerLayout(label: string, version: number): LayoutError {
  return new LayoutError(
    `the KV (${label}) has storage layout ${version}, newer than this version's ` +
      `${CURRENT_LAYOUT}: it is not written to; run the version that wrote it`,
  );
}

/**
 * Ties every write of this process to the layout it opened: each atomic operation checks the
 * layout key's versionstamp, so once a migration begins (it rewrites that key first) nothing
 * this process writes can land in the KV, and the next failed commit says why.
 */
export interface LayoutGuard {
  /** Adds the layout check to an atomic operation. */
  check(op: Deno.AtomicOperation): Deno.AtomicOperation;
  /** After a failed commit: throws 503 when the layout key changed, else returns. */
  afterConflict(): Promise<void>;
}

/** No check: for code given a KV it owns alone (unit tests, the tools after their own check). */
export const NO_GUARD: LayoutGuard = {
  check: (op) => op,
  afterConflict: () => Promise.resolve(),
};

/** The guard of a layout entry as read at start-up. */
export function layoutGuard(kv: Deno.Kv, entry: Deno.KvEntryMaybe<LayoutValue>): LayoutGuard {
  return {
    check: (op) => op.check(entry),
    afterConflict: async () => {
      const now = await withKvRetry(() => kv.get(LAYOUT_KEY));
      if (now.versionstamp !== entry.versionstamp) {
        throw new AppError(
          "service-unavailable",
          "The storage layout changed after this process started (a migration began); it no " +
            "longer writes. Restart it with the version that matches the storage.",
          { retryAfter: 30 },
        );
      }
    },
  };
}
