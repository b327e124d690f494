// The ceiling: plain Deno.serve answering each known request with bytes computed once at start
// (known_answers.ts: ROUTES_FILE, RAW_HEADERS). A POST body is read before answering, as any
// real server must. Prints one JSON `listening` line, like the server.
import { readKnownAnswers, respond } from "./known_answers.ts";

const answers = await readKnownAnswers();

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
