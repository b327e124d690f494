// The ceiling: plain Deno.serve answering each known request with bytes computed once at start.
// ROUTES_FILE holds {"GET /rest/books": {body, headers}, ...}: the exact answers this project's
// server gave, so both sides put the same body on the wire. RAW_HEADERS=content-type sends only
// its content type (the leanest answer Deno.serve can give); RAW_HEADERS=same sends every header
// it sent, with a fresh X-Request-Id per answer. A POST body is read before answering, as any
// real server must. Prints one JSON `listening` line, like the server.

interface Route {
  body: string;
  headers: Record<string, string>;
}

const routes = JSON.parse(await Deno.readTextFile(Deno.env.get("ROUTES_FILE")!)) as Record<
  string,
  Route
>;
const same = Deno.env.get("RAW_HEADERS") === "same";
const encoder = new TextEncoder();
const answers = new Map(
  Object.entries(routes).map(([key, route]) => {
    const { "x-request-id": requestId, ...headers } = route.headers;
    const contentType = { "content-type": headers["content-type"] ?? "application/json" };
    return [key, {
      body: encoder.encode(route.body),
      headers: same ? headers : contentType,
      requestId: same && requestId !== undefined,
    }];
  }),
);

function respond(
  answer: { body: Uint8Array<ArrayBuffer>; headers: Record<string, string>; requestId: boolean },
) {
  const headers = answer.requestId
    ? { ...answer.headers, "x-request-id": crypto.randomUUID() }
    : answer.headers;
  return new Response(answer.body, { headers });
}

function handle(request: Request): Response | Promise<Response> {
  const url = request.url;
  const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
  const answer = answers.get(`${request.method} ${path}`);
  if (answer === undefined) return new Response("not found\n", { status: 404 });
  if (request.method === "POST") return request.arrayBuffer().then(() => respond(answer));
  return respond(answer);
}

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handle);
console.log(JSON.stringify({ msg: "listening", http: `http://127.0.0.1:${server.addr.port}` }));
Deno.addSignalListener("SIGTERM", () => server.shutdown().then(() => Deno.exit(0)));
