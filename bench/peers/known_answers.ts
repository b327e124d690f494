// The answers the bench's ceilings give: ROUTES_FILE holds {"GET /rest/books": {body, headers},
// ...}, the exact answers this project's server gave, so every side puts the same body on the
// wire. RAW_HEADERS=content-type sends only its content type (the leanest answer Deno.serve can
// give); RAW_HEADERS=same sends every header it sent, with a fresh X-Request-Id per answer.

interface Route {
  body: string;
  headers: Record<string, string>;
}

/** One known request's answer, its bytes encoded once. */
export interface KnownAnswer {
  method: string;
  path: string;
  body: Uint8Array<ArrayBuffer>;
  headers: Record<string, string>;
  /** Whether each answer carries a fresh `X-Request-Id`. */
  requestId: boolean;
}

/** The answers of ROUTES_FILE, keyed `METHOD /path`, with the headers RAW_HEADERS asks for. */
export async function readKnownAnswers(): Promise<Map<string, KnownAnswer>> {
  const routes = JSON.parse(await Deno.readTextFile(Deno.env.get("ROUTES_FILE")!)) as Record<
    string,
    Route
  >;
  const same = Deno.env.get("RAW_HEADERS") === "same";
  const encoder = new TextEncoder();
  return new Map(
    Object.entries(routes).map(([key, route]) => {
      const { "x-request-id": requestId, ...headers } = route.headers;
      const contentType = { "content-type": headers["content-type"] ?? "application/json" };
      const [method, path] = key.split(" ") as [string, string];
      return [key, {
        method,
        path,
        body: encoder.encode(route.body),
        headers: same ? headers : contentType,
        requestId: same && requestId !== undefined,
      }];
    }),
  );
}

/** The Response of a known answer: a new one each time (a Response's body is read once). */
export function respond(answer: KnownAnswer): Response {
  const headers = answer.requestId
    ? { ...answer.headers, "x-request-id": crypto.randomUUID() }
    : answer.headers;
  return new Response(answer.body, { headers });
}
