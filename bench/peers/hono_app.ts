// The alternative a user would write: an idiomatic Hono app on Deno serving the same catalogue
// (BOOKS_FILE) at `GET /rest/books` and `GET /api/book/:id`, with Hono's own request-id, logger
// (to stdout, as the server's access log goes) and etag middleware in their default settings.
// The bench checks its bodies are byte for byte this project's. Prints one JSON `listening` line.
import { Hono } from "hono";
import { etag } from "hono/etag";
import { logger } from "hono/logger";
import { requestId } from "hono/request-id";

interface Book {
  id: number;
  title: string;
  year: number;
  author: { firstName: string; lastName: string };
}

const books = (JSON.parse(await Deno.readTextFile(Deno.env.get("BOOKS_FILE")!)) as Book[])
  .toSorted((a, b) => a.id - b.id);
const byId = new Map(books.map((b) => [b.id, b]));

const app = new Hono();
app.use(requestId());
app.use(logger());
app.use(etag());
app.get("/rest/books", (c) => c.json(books));
app.get("/api/book/:id", (c) => {
  const book = byId.get(Number(c.req.param("id")));
  return book ? c.json(book) : c.json({ error: "not found" }, 404);
});

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
console.log(JSON.stringify({ msg: "listening", http: `http://127.0.0.1:${server.addr.port}` }));
Deno.addSignalListener("SIGTERM", () => server.shutdown().then(() => Deno.exit(0)));
