import type { MigrationStep } from "./migrate.ts";

/**
 * Layout 5 changes no stored key: from it on, every write of an address appends its change to
 * the owner's change log (store/addresses/change_log.ts) in the same atomic operation. The number
 * moves so that a server of layout 4, which writes no changes, refuses the KV instead of writing
 * beside this one unseen by its streams.
 */
export const MIGRATION_V5: MigrationStep = {
  to: 5,
  what: "every write of an address appends its change to the owner's change log",
  batch: () => Promise.resolve({ cursor: undefined, items: 0 }),
  finish() {},
};
