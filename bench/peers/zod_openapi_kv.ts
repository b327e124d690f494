// The stack's own floor for a read by id: a minimal @hono/zod-openapi app (the framework this
// server is built on) with one route, `GET /addresses/{id}`, its path parameter checked by zod,
// doing the same KV read as the matrix's ceiling (address_book_kv.ts) and sending the same
// headers (HEADERS, as raw_kv_address_book.ts takes them), with nothing of this server's: no
// access log, gate, negotiation or conditional requests. So ours ÷ it is what this server adds
// over the stack, and it ÷ the ceiling what the stack costs. KV_PATH names a copy of the KV file.
// Prints one JSON `listening` line, like the server.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { openAddressBook } from "./address_book_kv.ts";

const kv = await Deno.openKv(Deno.env.get("KV_PATH")!);
const book = await openAddressBook(kv, []);
const headers = JSON.parse(Deno.env.get("HEADERS") ?? '{"static":{},"dynamic":[]}') as {
  static: Record<string, string>;
  dynamic: string[];
};
const withEtag = headers.dynamic.includes("etag");
const withRequestId = headers.dynamic.includes("x-request-id");

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
  const h: Record<string, string> = { ...headers.static };
  if (withRequestId) h["x-request-id"] = crypto.randomUUID();
  if (withEtag) h.etag = stored.etag;
  return c.body(JSON.stringify(stored.address), 200, h);
});

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
console.log(JSON.stringify({ msg: "listening", http: `http://127.0.0.1:${server.addr.port}` }));
