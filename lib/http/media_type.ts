/**
 * The one reading of a Content-Type value (RFC 9110, 8.3.1): `type "/" subtype` and then
 * `*( OWS ";" OWS [ parameter ] )`, a parameter being `token "=" ( token / quoted-string )` with
 * no whitespace around `=`. Every layer that asks what a request's body is asks here (the REST
 * body guard, API versioning, GraphQL-over-HTTP, the gRPC listener's answers to calls no service
 * takes, tracing), so no two of them can read one header two ways.
 */

// RFC 9110 5.6.2 `token`.
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const ESSENCE = new RegExp(`^${TOKEN}/${TOKEN}$`);
// 5.6.4 `quoted-string`: qdtext (tab, space, visible characters but `"` and `\`, obs-text) and
// quoted-pairs.
const QUOTED = String.raw`"((?:[\t \x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t\x20-\x7e\x80-\xff])*)"`;
const PARAMETER = new RegExp(
  String.raw`[ \t]*;[ \t]*(?:(${TOKEN})=(?:(${TOKEN})|${QUOTED}))?`,
  "y",
);

/** A Content-Type value read by RFC 9110's grammar. */
interface MediaType {
  /** `type/subtype`, lower-cased (`application/json`). */
  type: string;
  /**
   * The parameters in order, names lower-cased, values unquoted as sent; undefined when they do
   * not follow the grammar (the type alone is then still known).
   */
  parameters: [string, string][] | undefined;
}

/**
 * Reads a Content-Type value: undefined when absent or when `type/subtype` is malformed
 * (`Application/JSON; charset=utf-8;;` is `application/json` with one parameter).
 */
export function parseMediaType(value: string | undefined | null): MediaType | undefined {
  if (value === undefined || value === null) return undefined;
  const text = value.trim();
  const semicolon = text.indexOf(";");
  const type = (semicolon === -1 ? text : text.slice(0, semicolon)).trim().toLowerCase();
  if (!ESSENCE.test(type)) return undefined;
  return { type, parameters: semicolon === -1 ? [] : parametersOf(text, semicolon) };
}

/** The media type of a Content-Type value, lower-cased and without parameters, if well formed. */
export function mediaTypeOf(value: string | undefined | null): string | undefined {
  return parseMediaType(value)?.type;
}

function parametersOf(text: string, from: number): [string, string][] | undefined {
  const parameters: [string, string][] = [];
  PARAMETER.lastIndex = from;
  while (PARAMETER.lastIndex < text.length) {
    const match = PARAMETER.exec(text);
    if (match === null) return undefined;
    const [, name, token, quoted] = match;
    if (name !== undefined) {
      parameters.push([name.toLowerCase(), token ?? quoted!.replace(/\\(.)/g, "$1")]);
    }
  }
  return parameters;
}

/**
 * True for the gRPC family's types (`application/grpc`, `application/grpc-web`,
 * `application/grpc-web-text`, each optionally `+codec`), given a media type as `mediaTypeOf`
 * returns it.
 */
export function isGrpcMediaType(type: string | undefined): type is string {
  return type !== undefined && GRPC_FAMILY.test(type);
}

const GRPC_FAMILY = /^application\/grpc(?:-web(?:-text)?)?(?:\+|$)/;
