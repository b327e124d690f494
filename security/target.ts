/**
 * The canonical request target (docs/security.md, "One request, one view"). This API's paths need
 * no escaping, so a target is canonical when its path is `/` or `/`-separated segments of RFC 3986
 * `pchar`s without `%` (no percent-encoding), none of them empty (`//`) or a dot segment (`.`,
 * `..`), optionally one trailing `/` (no route has one: the router answers 404), and its query
 * has no fragment, space or non-ASCII byte. Every layer (the gate, the answers in front of the
 * router, the router, the 405 logic, the access log) then reads the same string, because none of
 * them has anything left to decode or normalise.
 */

import { AppError } from "../lib/errors.ts";

// Segments cannot contain "/", so the pattern matches in linear time whatever the input.
const SEGMENT = String.raw`(?!\.\.?(?:[/?]|$))[A-Za-z0-9\-._~!$&'()*+,;=:@]+`;
const PATH_AND_QUERY = new RegExp(
  String.raw`^/(?:${SEGMENT}(?:/${SEGMENT})*/?)?(?:\?[!"$-~]*)?$`,
);
// Host names, IPv4 and bracketed IPv6 literals, with a port: nothing that could end the
// authority early for one parser and not for another (`/`, `?`, `#`, `@`, `\`, `%`).
const AUTHORITY = /^(?:[A-Za-z0-9\-._~]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/**
 * The canonical path of a request URL as Deno.serve builds it (`scheme://` + Host + target), or
 * undefined when the target is not canonical. `host` is the request's Host header: Deno puts it
 * into the URL as sent, so a Host holding `/` would move part of itself into the path.
 */
export function canonicalPath(url: string, host: string | null): string | undefined {
  const authorityStart = url.indexOf("//") + 2;
  const start = url.indexOf("/", authorityStart);
  if (start === -1) return undefined;
  if (host !== null) {
    if (host.length !== start - authorityStart || !url.startsWith(host, authorityStart)) {
      return undefined;
    }
  }
  if (!AUTHORITY.test(url.slice(authorityStart, start))) return undefined;
  return canonicalRequestPath(url.slice(start));
}

/**
 * The path of a request target (`/path?query`, as HTTP/2's `:path` carries it), or undefined
 * when it is not canonical.
 */
export function canonicalRequestPath(target: string): string | undefined {
  if (!PATH_AND_QUERY.test(target)) return undefined;
  const query = target.indexOf("?");
  return query === -1 ? target : target.slice(0, query);
}

/**
 * The path of a request URL without judging it (what a log line or an error names): up to the
 * query, at most 200 characters.
 */
export function rawPathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return "/";
  const query = url.indexOf("?", start);
  return url.slice(start, query === -1 ? undefined : query).slice(0, 200);
}

/** The refusal of a target that is not canonical, on every listener: 400 `invalid-parameter`. */
export function notCanonical(target: string): AppError {
  return new AppError(
    "invalid-parameter",
    `The request target is not in canonical form (${target.slice(0, 100)}): send the path ` +
      "without percent-encoding, fragment, empty or dot segments and backslashes.",
  );
}
