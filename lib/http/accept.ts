/**
 * Content negotiation (RFC 9110 12.5): the one reader of `Accept` and `Accept-Language`. It parses
 * a header into weighted ranges and picks among what a resource offers; each resource only says
 * what it offers (lib/http/negotiate.ts, graphql/over_http.ts, routes/owner_data.ts, the error
 * body in server/render_error.ts, the message language in lib/errors.ts), so a header means
 * the same on every path.
 *
 * Choices where the RFC leaves room, made once here:
 * - A member that does not parse (a malformed range, a weight that is not an RFC qvalue) is
 *   ignored, as an empty list element is; it neither grants nor refuses anything.
 * - Media type parameters other than `q` do not stop a range from matching: our representations
 *   carry none, and a client adding `charset=utf-8` means the same type.
 * - Equally specific ranges for one type (`a/b;q=0, a/b`): the highest weight.
 * - Between equally acceptable types: the one the client named more specifically wins; between
 *   types reached through the same kind of wildcard, the resource's default; between types named
 *   alike, the resource's order.
 */

/** One media range of an `Accept` header. */
export interface MediaRange {
  /** Lower-cased `type/subtype`, `type/*` or `*\/*`. */
  readonly range: string;
  /** Lower-cased type, or `*`. */
  readonly type: string;
  /** Lower-cased subtype, or `*`. */
  readonly subtype: string;
  /** Parameters before the weight: names lower-cased, quoted values unquoted. */
  readonly params: readonly (readonly [string, string])[];
  /** The weight, 0 to 1; 0 means "not acceptable". */
  readonly q: number;
}

/** One language range of an `Accept-Language` header. */
interface LanguageRange {
  /** Lower-cased language range (`de`, `de-ch`) or `*`. */
  readonly range: string;
  /** The weight, 0 to 1; 0 means "not acceptable". */
  readonly q: number;
}

/** How a header accepts one media type. */
interface Acceptance {
  /** The weight of the most specific range that matches the type; 0 when none does. */
  q: number;
  /** That range's kind: 2 `type/subtype`, 1 `type/*`, 0 `*\/*`; -1 when none matches. */
  specificity: number;
}

const SLASH = 0x2f;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const SEMICOLON = 0x3b;
const COMMA = 0x2c;
const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;
// RFC 9110 12.4.2, with any number of decimals (a sender must not send more than three).
const QVALUE = /^(?:0(?:\.[0-9]*)?|1(?:\.0*)?)$/;
// RFC 4647 2.1 (basic language range), lower-cased.
const LANGUAGE_RANGE = /^(?:\*|[a-z]{1,8}(?:-[a-z0-9]{1,8})*)$/;

// Clients send the same few headers over and over: their parses are kept, for short headers
// only and a bounded number of them, so memory stays bounded whatever clients send.
const MEMO_ENTRIES = 128;
const MEMO_HEADER_CHARS = 256;
const parsedAccept = new Map<string, readonly MediaRange[]>();
// And the choices, per list of offers (each resource asks with its own constant list).
const answers = new WeakMap<
  readonly string[],
  { fallback: string; byHeader: Map<string, string | null> }
>();

/** The media ranges of an `Accept` header, in the order sent, less members that do not parse. */
export function parseAccept(header: string): readonly MediaRange[] {
  const known = parsedAccept.get(header);
  if (known !== undefined) return known;
  const ranges: MediaRange[] = [];
  for (const member of membersOf(header)) {
    const range = mediaRangeOf(member);
    if (range !== undefined) ranges.push(range);
  }
  Object.freeze(ranges);
  if (header.length <= MEMO_HEADER_CHARS) {
    if (parsedAccept.size >= MEMO_ENTRIES) parsedAccept.clear();
    parsedAccept.set(header, ranges);
  }
  return ranges;
}

/** The language ranges of an `Accept-Language` header, in the order sent, as `parseAccept`. */
export function parseAcceptLanguage(header: string): readonly LanguageRange[] {
  const ranges: LanguageRange[] = [];
  for (const [first = "", ...params] of membersOf(header)) {
    const range = first.trim().toLowerCase();
    if (!LANGUAGE_RANGE.test(range)) continue;
    const q = weightOf(params);
    if (q !== undefined) ranges.push(Object.freeze({ range, q: q.q }));
  }
  return Object.freeze(ranges);
}

/** How `header` accepts `type` (a lower-cased `type/subtype`); no header accepts everything. */
export function acceptance(header: string | null | undefined, type: string): Acceptance {
  if (header === null || header === undefined || header === "") return { q: 1, specificity: 0 };
  return acceptanceIn(parseAccept(header), type);
}

/** How parsed ranges accept `type`: the q of the most specific matching range (RFC 9110 12.5.1). */
function acceptanceIn(ranges: readonly MediaRange[], type: string): Acceptance {
  let q = 0;
  let specificity = -1;
  for (const range of ranges) {
    const s = specificityFor(range, type);
    if (s === -1) continue;
    if (s > specificity) {
      q = range.q;
      specificity = s;
    } else if (s === specificity && range.q > q) q = range.q;
  }
  return { q, specificity };
}

/**
 * The type of `offers` (lower-cased `type/subtype`s, in the resource's order of preference)
 * that `header` accepts most, or undefined when it accepts none (a 406). `fallback` is the
 * resource's default, one of `offers`: what a request without `Accept`, or with only
 * wildcards, gets. `offers` is a resource's constant list: answers are kept per list.
 */
export function preferredMediaType<T extends string>(
  header: string | null | undefined,
  offers: readonly T[],
  fallback: T = offers[0]!,
): T | undefined {
  // The common headers without parsing: the answers `pickMediaType` gives them.
  if (header === null || header === undefined || header === "" || header === "*/*") {
    return fallback;
  }
  for (const offer of offers) if (header === offer) return offer;
  if (header.length > MEMO_HEADER_CHARS) {
    return pickMediaType(parseAccept(header), offers, fallback);
  }
  let memo = answers.get(offers);
  if (memo === undefined || memo.fallback !== fallback) {
    memo = { fallback, byHeader: new Map() };
    answers.set(offers, memo);
  }
  const known = memo.byHeader.get(header);
  if (known !== undefined) return known === null ? undefined : known as T;
  const answer = pickMediaType(parseAccept(header), offers, fallback);
  if (memo.byHeader.size >= MEMO_ENTRIES) memo.byHeader.clear();
  memo.byHeader.set(header, answer ?? null);
  return answer;
}

/** `preferredMediaType` of parsed ranges. */
export function pickMediaType<T extends string>(
  ranges: readonly MediaRange[],
  offers: readonly T[],
  fallback: T = offers[0]!,
): T | undefined {
  let best: T | undefined;
  let bestQ = 0;
  let bestSpecificity = -1;
  for (const offer of offers) {
    const { q, specificity } = acceptanceIn(ranges, offer);
    if (q === 0) continue;
    if (
      q > bestQ ||
      (q === bestQ &&
        (specificity > bestSpecificity ||
          (specificity === bestSpecificity && specificity < 2 && offer === fallback)))
    ) {
      best = offer;
      bestQ = q;
      bestSpecificity = specificity;
    }
  }
  return best;
}

/**
 * The language of `offers` (lower-cased tags) that `header` prefers, by RFC 4647 3.4 lookup:
 * ranges in order of weight (then as sent), each shortened from its end until it names an
 * offer (`de-ch` finds `de`); `*` names none, and a tag the client weighs 0 is never chosen.
 * Undefined when no range finds one (the caller's default applies).
 */
export function preferredLanguage<T extends string>(
  header: string | null | undefined,
  offers: readonly T[],
): T | undefined {
  if (header === null || header === undefined || header === "") return undefined;
  const ranges = parseAcceptLanguage(header);
  // Array.prototype.sort is stable: equal weights keep the order sent.
  const ordered = ranges.filter((r) => r.q > 0 && r.range !== "*").sort((a, b) => b.q - a.q);
  for (const { range } of ordered) {
    for (let tag = range; tag !== ""; tag = shortened(tag)) {
      const offer = offers.find((o) => o === tag);
      if (offer !== undefined && !refused(ranges, tag)) return offer;
    }
  }
  return undefined;
}

/** True when the ranges naming `tag` itself all weigh it 0 (its most specific ranges decide). */
function refused(ranges: readonly LanguageRange[], tag: string): boolean {
  let named = false;
  for (const range of ranges) {
    if (range.range !== tag) continue;
    if (range.q > 0) return false;
    named = true;
  }
  return named;
}

/** RFC 4647 3.4: drops the last subtag, and a single-character subtag it leaves at the end. */
function shortened(tag: string): string {
  const last = tag.lastIndexOf("-");
  if (last === -1) return "";
  const rest = tag.slice(0, last);
  const before = rest.lastIndexOf("-");
  return last - before === 2 ? rest.slice(0, Math.max(before, 0)) : rest;
}

/** 2 when `range` names `type`, 1 when its `type/*` covers it, 0 for `*\/*`, -1 otherwise. */
function specificityFor(range: MediaRange, type: string): number {
  if (range.type === "*") return 0;
  if (range.subtype === "*") {
    return type.length > range.type.length && type.startsWith(range.type) &&
        type.charCodeAt(range.type.length) === SLASH
      ? 1
      : -1;
  }
  return range.range === type ? 2 : -1;
}

/** One member of the list: its range, then its parameters (`;`-separated, untrimmed). */
function mediaRangeOf([first = "", ...params]: string[]): MediaRange | undefined {
  const range = first.trim().toLowerCase();
  const slash = range.indexOf("/");
  if (slash === -1) return undefined;
  const type = range.slice(0, slash);
  const subtype = range.slice(slash + 1);
  if (!TOKEN.test(type) || !TOKEN.test(subtype)) return undefined;
  if (type === "*" && subtype !== "*") return undefined;
  const weight = weightOf(params);
  if (weight === undefined) return undefined;
  return Object.freeze({ range, type, subtype, params: weight.params, q: weight.q });
}

/**
 * The weight of a member (the first `q` parameter; 1 without one) and the parameters before it
 * (what follows the weight is an extension, ignored); undefined when the weight is not a
 * qvalue. Empty and malformed parameters other than `q` are skipped.
 */
function weightOf(
  params: string[],
): { q: number; params: readonly (readonly [string, string])[] } | undefined {
  const before: (readonly [string, string])[] = [];
  for (const param of params) {
    const eq = param.indexOf("=");
    if (eq === -1) continue;
    const name = param.slice(0, eq).trim().toLowerCase();
    const value = param.slice(eq + 1).trim();
    if (name === "q") {
      return QVALUE.test(value) ? { q: Number(value), params: Object.freeze(before) } : undefined;
    }
    if (TOKEN.test(name)) before.push(Object.freeze([name, unquoted(value)] as const));
  }
  return { q: 1, params: Object.freeze(before) };
}

function unquoted(value: string): string {
  if (value.length < 2 || value.charCodeAt(0) !== QUOTE) return value;
  return value.slice(1, value.endsWith('"') ? -1 : undefined).replace(/\\(.)/g, "$1");
}

/**
 * The members of a comma-separated list, each split at `;`, both outside quoted strings (a
 * parameter value may hold either). Empty members are dropped (RFC 9110 5.6.1).
 */
function membersOf(header: string): string[][] {
  const members: string[][] = [];
  let pieces: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < header.length; i++) {
    const c = header.charCodeAt(i);
    if (quoted) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) quoted = false;
    } else if (c === QUOTE) {
      quoted = true;
    } else if (c === SEMICOLON || c === COMMA) {
      pieces.push(header.slice(start, i));
      start = i + 1;
      if (c === COMMA) {
        if (pieces.length > 1 || pieces[0]!.trim() !== "") members.push(pieces);
        pieces = [];
      }
    }
  }
  pieces.push(header.slice(start));
  if (pieces.length > 1 || pieces[0]!.trim() !== "") members.push(pieces);
  return members;
}
