// The ceiling: plain Deno.serve answering each known request with bytes computed once at start.
// ROUTES_FILE holds {"GET /rest/books": "<body>", ...}: the exact bodies this project's server
// sent, so both sides put the same bytes on the wire. A POST body is read before answering, as
// any real server must. Prints one JSON `listening` line, like the server.

const routes = JSON.parse(await Deno.readTextFile(Deno.env.get("ROUTES_FILE")!)) as Record<
  string,
  string
>;
const encoder = new TextEncoder();
const bodies = new Map(Object.entries(routes).map(([key, body]) => [key, encoder.encode(body)]));
const headers = { "content-type": "application/json" };

function handle(request: Request): Response | Promise<Response> {
  const url = request.url;
  const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
  const body = bodies.get(`${request.method} ${path}`);
  if (body === undefined) return new Response("not found\n", { status: 404 });
  if (request.method === "POST") {
    return request.arrayBuffer().then(() => new Response(body, { headers }));
  }
  return new Response(body, { headers });
}

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handle);
console.log(JSON.stringify({ msg: "listening", http: `http://127.0.0.1:${server.addr.port}` }));
Deno.addSignalListener("SIGTERM", () => server.shutdown().then(() => Deno.exit(0)));
