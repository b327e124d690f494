/**
 * Adds each of `add` that `headers` (a response's) does not carry yet, and leaves the rest as
 * they are.
 *
 * Why the one rule for every layer that decorates answers (request id, `nosniff`, RateLimit,
 * page policies): an answer may carry a stricter value of its own, and one built with them
 * already is left as it was built.
 */
export function addMissingHeaders(headers: Headers, add: Record<string, string>): void {
  for (const name in add) {
    if (!headers.has(name)) headers.set(name, add[name]!);
  }
}

// A mark on the Response itself: a property read, where a WeakSet's lookup and insertion per
// answer showed in the profile of a read by id.
const COMPLETE = Symbol("complete answer");
type Marked = Response & { [COMPLETE]?: true };

/**
 * Marks an answer built with every header the HTTP entry adds to answers (`X-Request-Id` and
 * `nosniff`, as lib/http/negotiate.ts `jsonHeaders` gives them; not an HTML page, so no page
 * policy), so that the entry (server/entry.ts) does not read its headers to find that out.
 *
 * Why: Deno.serve sends a Response built from a plain object of headers on a native fast path,
 * and reading the Response's `headers` afterwards builds them in JavaScript and drops that path
 * (a few µs per answer, docs/bench.md "Profile summary: REST").
 */
export function completeAnswer(response: Response): Response {
  (response as Marked)[COMPLETE] = true;
  return response;
}

/** True for an answer marked by `completeAnswer`. */
export function isCompleteAnswer(response: Response): boolean {
  return (response as Marked)[COMPLETE] === true;
}
