// The stack's own floor for an answer known in advance (the book catalogue): a minimal
// @hono/zod-openapi app (the framework this server is built on), one `createRoute` route per
// known request, each sending the ceiling's bytes and headers (known_answers.ts, with
// RAW_HEADERS=same) and nothing of this server's: no access log, gate, negotiation or
// conditional requests. So it ÷ the same-headers ceiling is what the framework costs, and ours ÷
// it what this server adds over it. Prints one JSON `listening` line, like the server.
import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { readKnownAnswers, respond } from "./known_answers.ts";

const app = new OpenAPIHono();
for (const answer of (await readKnownAnswers()).values()) {
  const route = createRoute({
    method: answer.method.toLowerCase() as "get" | "post",
    path: answer.path,
    responses: { 200: { description: "The known answer" } },
  });
  const handler = (c: Context): Response | Promise<Response> =>
    answer.method === "POST" ? c.req.arrayBuffer().then(() => respond(answer)) : respond(answer);
  app.openapi(route, handler);
}

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
console.log(JSON.stringify({ msg: "listening", http: `http://127.0.0.1:${server.addr.port}` }));
Deno.addSignalListener("SIGTERM", () => server.shutdown().then(() => Deno.exit(0)));
