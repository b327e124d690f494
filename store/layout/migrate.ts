import {
  CURRENT_LAYOUT,
  initialiseLayout,
  LAYOUT_KEY,
  LayoutError,
  type LayoutGuard,
  layoutGuard,
  type LayoutState,
  type LayoutValue,
  MIGRATION_KEY,
  newerLayout,
  readLayout,
} from "./layout.ts";
import { withKvRetry } from "../kv/retry.ts";
import { MIGRATION_V2 } from "./migration_v2.ts";
import { MIGRATION_V3 } from "./migration_v3.ts";
import { MIGRATION_V4 } from "./migration_v4.ts";
import { MIGRATION_V5 } from "./migration_v5.ts";

/** One layout change: from `to - 1` to `to`, in bounded batches. */
export interface MigrationStep {
  to: number;
  /** What it changes, for the log and the tool's output. */
  what: string;
  /**
   * Adds the next batch after `cursor` to `op` (bounded by KV's limits for one atomic operation,
   * leaving room for a few checks and writes of the runner); `cursor` undefined in the answer
   * means this was the last batch.
   */
  batch(
    kv: Deno.Kv,
    cursor: string | undefined,
    op: Deno.AtomicOperation,
  ): Promise<{ cursor: string | undefined; items: number }>;
  /** Writes of the operation that completes the migration. */
  finish(op: Deno.AtomicOperation): void;
}

/** Every migration, by the layout it produces. */
const STEPS: readonly MigrationStep[] = [
  MIGRATION_V2,
  MIGRATION_V3,
  MIGRATION_V4,
  MIGRATION_V5,
];

/** `["meta", "migration"]` while a migration runs: how far it got. */
interface MigrationProgress {
  to: number;
  cursor?: string;
  items: number;
  startedAt: string;
}

/** Reported after every committed batch. */
export interface MigrationProgressEvent {
  from: number;
  to: number;
  /** Items migrated so far in this step (by every process that took part). */
  items: number;
  done: boolean;
  what: string;
}

/**
 * Brings a KV to the current layout: a fresh KV is marked current, an older one is migrated step
 * by step. Each batch is one atomic operation that also checks and advances the progress key,
 * so after kill -9 the next run continues after the last committed batch, and processes that
 * migrate together share the work (a batch another one committed first fails its check and is
 * read again from the new progress). Returns the layout found first (null: fresh).
 */
export async function migrateKv(
  kv: Deno.Kv,
  label: string,
  onProgress: (event: MigrationProgressEvent) => void = () => {},
): Promise<{ from: number | null }> {
  let from: number | null | undefined;
  for (;;) {
    const state = await readLayout(kv, label);
    from = from === undefined ? state.version : from;
    if (state.version === null) {
      await initialiseLayout(kv, state.entry);
      continue;
    }
    checkNotNewer(label, state);
    if (state.version === CURRENT_LAYOUT) return { from };
    const to = state.migratingTo ?? state.version + 1;
    const step = STEPS.find((s) => s.to === to);
    if (step === undefined || to !== state.version + 1) {
      throw new LayoutError(`the KV (${label}) has layout ${state.version}: no migration to ${to}`);
    }
    if (state.migratingTo === undefined) {
      // Rewriting the layout key first stops every process that opened the old layout from
      // writing (their operations check it; store/layout/layout.ts).
      const begin: LayoutValue = { version: state.version, migratingTo: to };
      const progress: MigrationProgress = { to, items: 0, startedAt: new Date().toISOString() };
      await withKvRetry(() =>
        kv.atomic().check(state.entry).set(LAYOUT_KEY, begin).set(MIGRATION_KEY, progress)
          .commit()
      );
      continue;
    }
    // The layout and the progress in one snapshot: another process may have finished the step
    // (and deleted the progress) since the layout was read.
    const [layoutNow, progress] = await withKvRetry(() =>
      kv.getMany<[LayoutValue, MigrationProgress]>([LAYOUT_KEY, MIGRATION_KEY])
    );
    if (layoutNow.versionstamp !== state.entry.versionstamp) continue;
    if (progress.value === null || progress.value.to !== to) {
      throw new LayoutError(
        `the KV (${label}) is marked as migrating to layout ${to} but holds no progress for it`,
      );
    }
    const op = kv.atomic().check(state.entry).check(progress);
    const batch = await step.batch(kv, progress.value.cursor, op);
    const items = progress.value.items + batch.items;
    const done = batch.cursor === undefined;
    if (done) {
      step.finish(op);
      op.set(LAYOUT_KEY, { version: to } satisfies LayoutValue).delete(MIGRATION_KEY);
    } else {
      op.set(MIGRATION_KEY, { ...progress.value, cursor: batch.cursor, items });
    }
    const result = await withKvRetry(() => op.commit());
    if (result.ok) onProgress({ from: state.version, to, items, done, what: step.what });
  }
}

function checkNotNewer(label: string, state: LayoutState): void {
  const highest = Math.max(state.version ?? 0, state.migratingTo ?? 0);
  if (highest > CURRENT_LAYOUT) throw newerLayout(label, highest);
}

/** True when the KV needs `migrateKv` before this version may use it. */
function needsMigration(state: LayoutState): boolean {
  return state.version !== null && state.version < CURRENT_LAYOUT;
}

/**
 * Start-up: returns the guard of the current layout, initialising a fresh KV. A newer layout
 * stops start-up; an older one too unless `migrateOnStart`, in which case it is migrated first.
 * Either refusal is one line naming what to do.
 */
export async function openLayout(
  kv: Deno.Kv,
  label: string,
  options: { migrateOnStart: boolean; onProgress?: (event: MigrationProgressEvent) => void },
): Promise<LayoutGuard> {
  for (;;) {
    const state = await readLayout(kv, label);
    if (state.version === null) {
      await initialiseLayout(kv, state.entry);
      continue;
    }
    checkNotNewer(label, state);
    if (needsMigration(state)) {
      if (!options.migrateOnStart) {
        const what = state.migratingTo === undefined
          ? `has storage layout ${state.version}`
          : `is being migrated to layout ${state.migratingTo} (or the migration was interrupted)`;
        throw new LayoutError(
          `the KV (${label}) ${what}; this version needs layout ${CURRENT_LAYOUT}: run ` +
            "`deno task migrate` first, or start with MIGRATE_ON_START=true",
        );
      }
      await migrateKv(kv, label, options.onProgress);
      continue;
    }
    return layoutGuard(kv, state.entry);
  }
}
