// The stack's own floor for a read by id: a minimal @hono/zod-openapi app (the framework this
// server is built on) with one route, `GET /addresses/{id}`, its path parameter checked by zod,
// doing the same KV read as the matrix's ceiling (address_book_kv.ts) and sending the same
// headers (HEADERS, read by answer_headers.ts), with nothing of this server's: no
// access log, gate, negotiation or conditional requests. So ours ÷ it is what this server adds
// over the stack, and it ÷ the ceiling what the stack costs. KV_PATH names a copy of the KV file.
// Prints one JSON `listening` line, like the server.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { openAddressBook } from "./address_book_kv.ts";
import { answerHeaders } from "./answer_headers.ts";

const kv = await Deno.openKv(Deno.env.get("KV_PATH")!);
const book = await openAddressBook(kv, []);
const headersOf = answerHeaders();

const app = new OpenAPIHono();
const read = createRoute({
  method: "get",
  path: "/addresses/{id}",
  request: { params: z.object({ id: z.coerce.number().int().positive().max(2 ** 53 - 1) }) },
  responses: { 200: { description: "The address" }, 404: { description: "Not found" } },
});
app.openapi(read, async (c) => {
  const stored = await book.get(c.req.valid("param").id);
  if (stored === undefined) return c.json({ error: "not found" }, 404);
  return c.body(JSON.stringify(stored.address), 200, headersOf({ etag: stored.etag }));
});

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
console.log(JSON.stringify({ msg: "listening", http: `http://127.0.0.1:${server.addr.port}` }));
