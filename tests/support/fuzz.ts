/**
 * What every fuzz test shares: the seed and run count (from the environment, so a failure can be
 * replayed), the fast-check runner that prints them, and the invariants every answer must keep.
 * docs/fuzzing.md explains how to run and replay.
 */
import fc from "fast-check";

/** The seed of this run: `FUZZ_SEED` when set (a replay), else a fresh one. */
export const FUZZ_SEED: number = seedFromEnv();

/**
 * Multiplies every suite's number of runs: 1 in `deno task test`, 10 in `deno task fuzz` (which
 * sets `FUZZ_LONG`); `FUZZ_SCALE` overrides both.
 */
export const FUZZ_SCALE: number = positiveFromEnv(
  "FUZZ_SCALE",
  Deno.env.get("FUZZ_LONG") ? 10 : 1,
);

function seedFromEnv(): number {
  const text = Deno.env.get("FUZZ_SEED");
  if (text === undefined || text === "") return (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;
  const seed = Number(text);
  if (!Number.isInteger(seed)) throw new Error(`FUZZ_SEED must be an integer, got ${text}`);
  return seed;
}

function positiveFromEnv(name: string, fallback: number): number {
  const text = Deno.env.get(name);
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!(value > 0)) throw new Error(`${name} must be a positive number, got ${text}`);
  return value;
}

/** Cases run per suite, counted as the suites report them (for the closing summary). */
const casesRun: Record<string, number> = {};

/**
 * Runs an async property `runs × FUZZ_SCALE` times with the run's seed. On failure the error
 * names the seed, the replay path and the command that replays it; `FUZZ_PATH` replays only the
 * failing case (with the same seed).
 */
export async function fuzz<T>(
  name: string,
  runs: number,
  arbitrary: fc.Arbitrary<T>,
  check: (value: T) => Promise<void>,
): Promise<void> {
  const numRuns = Math.max(1, Math.round(runs * FUZZ_SCALE));
  const path = Deno.env.get("FUZZ_PATH");
  let count = 0;
  const property = fc.asyncProperty(arbitrary, async (value) => {
    count++;
    await check(value);
  });
  try {
    await fc.assert(property, {
      seed: FUZZ_SEED,
      numRuns,
      // Shrinking talks to a real server; bounded so a failure is reported in reasonable time.
      interruptAfterTimeLimit: 120_000 * FUZZ_SCALE,
      markInterruptAsFailure: false,
      ...(path ? { path } : {}),
    });
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    const failedPath = /path: "([^"]*)"/.exec(text)?.[1];
    console.error(
      `\nFUZZ FAILURE in "${name}": seed ${FUZZ_SEED}` +
        (failedPath ? `, path ${failedPath}` : "") +
        `\nreplay: FUZZ_SEED=${FUZZ_SEED}${failedPath ? ` FUZZ_PATH=${failedPath}` : ""}` +
        ` deno test -A ${testFile()}\n`,
    );
    // A counterexample may hold megabytes of body: the report keeps its start.
    const cause = error instanceof Error ? error.cause : undefined;
    throw new Error(text.length > 4000 ? `${text.slice(0, 4000)}… (cut)` : text, { cause });
  } finally {
    casesRun[name] = (casesRun[name] ?? 0) + count;
    console.log(`fuzz "${name}": ${count} cases, seed ${FUZZ_SEED}`);
  }
}

function testFile(): string {
  const main = Deno.mainModule;
  return main.startsWith("file://") ? new URL(main).pathname.replace(`${Deno.cwd()}/`, "") : main;
}

// What an internal leaks as: a stack frame, a file or module path, a runtime error class name.
const INTERNALS: RegExp[] = [
  /\bat [^\s]+ \(.*:\d+:\d+\)/,
  /\n\s+at /,
  /file:\/\//,
  /node_modules/,
  /ext:(?:deno|core|node)/,
  /\/work\//,
  /\b(?:TypeError|ReferenceError|RangeError|AssertionError|HTTPException|ZodError)\b/,
  /Cannot read propert/,
  /is not a function/,
  /undefined is not/,
  /disk on fire/,
];

/** Fails when a body shows a stack trace, a source path or a runtime error's name. */
export function assertNoInternals(body: string, where: string): void {
  for (const pattern of INTERNALS) {
    if (pattern.test(body)) {
      throw new Error(`${where}: body leaks internals (${pattern}): ${body.slice(0, 500)}`);
    }
  }
}

const CODE = /^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$/;

/** Fails unless `body` is the detailed error body (docs/errors.md). */
export function assertDetailedErrorBody(body: unknown, where: string): void {
  const errors = (body as { errors?: unknown })?.errors;
  if (!Array.isArray(errors) || errors.length === 0) {
    throw new Error(`${where}: not a 7.4 error body: ${JSON.stringify(body).slice(0, 300)}`);
  }
  for (const e of errors) {
    const ok = typeof e?.error === "string" && CODE.test(e.error) &&
      typeof e.message === "string" && e.message.length > 0 &&
      typeof e.detail === "string" && e.detail.length > 0 &&
      // Relative (the fuzzed servers set no PUBLIC_URL): never a host the request named.
      (e.help === undefined || e.help === `/docs/errors#${e.error}`);
    if (!ok) throw new Error(`${where}: bad 7.4 error element: ${JSON.stringify(e)}`);
  }
}

/** Fails unless `body` is an RFC 7807 problem (type, title, status, detail, instance). */
export function assertProblemBody(body: unknown, status: number, where: string): void {
  const p = body as Record<string, unknown>;
  const ok = typeof p?.type === "string" && typeof p.title === "string" &&
    p.status === status && typeof p.detail === "string" && typeof p.instance === "string";
  if (!ok) throw new Error(`${where}: bad problem+json: ${JSON.stringify(body).slice(0, 300)}`);
}

/** Fails unless `body` is a GraphQL error response: `errors` each with a message and a code. */
export function assertGraphqlErrors(body: unknown, where: string): void {
  const errors = (body as { errors?: unknown })?.errors;
  if (!Array.isArray(errors) || errors.length === 0) {
    throw new Error(`${where}: no GraphQL errors: ${JSON.stringify(body).slice(0, 300)}`);
  }
  for (const e of errors) {
    const code = e?.extensions?.code;
    if (typeof e?.message !== "string" || typeof code !== "string" || !CODE.test(code)) {
      throw new Error(`${where}: GraphQL error without message or code: ${JSON.stringify(e)}`);
    }
  }
}

/** Connect error codes a client's input may cause (never internal, unknown or data_loss). */
export const CONNECT_CLIENT_CODES = new Set([
  "canceled",
  "invalid_argument",
  "deadline_exceeded",
  "not_found",
  "permission_denied",
  "resource_exhausted",
  "failed_precondition",
  "unimplemented",
  "unauthenticated",
  "out_of_range",
]);

/** gRPC status numbers a client's input may cause: not UNKNOWN (2), INTERNAL (13), DATA_LOSS (15). */
export function isClientGrpcStatus(status: number): boolean {
  return Number.isInteger(status) && status >= 0 && status <= 16 &&
    status !== 2 && status !== 13 && status !== 15 && status !== 14;
}

/**
 * The names `Object.prototype` carries (`constructor`, `toString`, `__proto__`, …): used as a key
 * into a plain object, each finds something where a `Map` finds nothing.
 */
export const PROTOTYPE_NAMES: readonly string[] = [
  ...Object.getOwnPropertyNames(Object.prototype),
  "prototype",
];

/** One of PROTOTYPE_NAMES. */
export const prototypeName: fc.Arbitrary<string> = fc.constantFrom(...PROTOTYPE_NAMES);

/** Strings in Latin-1 without controls: what a fetch header value can carry. */
export function headerText(maxLength = 40): fc.Arbitrary<string> {
  return fc.string({
    unit: fc.oneof(
      {
        weight: 8,
        arbitrary: fc.integer({ min: 0x20, max: 0x7e }).map((n) => String.fromCharCode(n)),
      },
      {
        weight: 1,
        arbitrary: fc.integer({ min: 0x80, max: 0xff }).map((n) => String.fromCharCode(n)),
      },
      { weight: 1, arbitrary: fc.constant("\t") },
    ),
    maxLength,
  });
}

/**
 * Strings with the characters that break things: controls, surrogates, quotes, RTL, emoji, and
 * the names of Object.prototype.
 */
export function nastyString(maxLength = 40): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string({ maxLength }),
    prototypeName,
    fc.string({ unit: "binary", maxLength }),
    fc.constantFrom(
      "",
      " ",
      "\u0000",
      "\ud800",
      "\udfff",
      "a\ud83dz",
      "\u202e",
      "\ufeff",
      "💥",
      "'\"\\",
      "<script>",
      "%00",
      "../../etc/passwd",
      "${x}",
      "null",
      "__proto__",
    ),
  );
}
