/**
 * Adds each of `add` that `headers` (a response's) does not carry yet, and leaves the rest as
 * they are.
 *
 * Why the one rule for every layer that decorates answers (request id, `nosniff`, RateLimit,
 * page policies): Deno.serve sends a Response whose headers were not changed after it was built
 * on a faster path, and the hot answers are built with these headers already, so "only when
 * missing" leaves them untouched; it also lets an answer carry a stricter value of its own.
 */
export function addMissingHeaders(headers: Headers, add: Record<string, string>): void {
  for (const name in add) {
    if (!headers.has(name)) headers.set(name, add[name]!);
  }
}
