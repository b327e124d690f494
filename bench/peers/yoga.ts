// graphql-yoga on Deno with the books schema (docs/graphql.md) and the same catalogue: the
// GraphQL server a user would pick. Defaults otherwise (parser and validation caches on), with
// GraphiQL and logging off. BOOKS_FILE is the catalogue; prints one JSON `listening` line.
import { createSchema, createYoga } from "graphql-yoga";

interface Book {
  id: number;
  title: string;
  year: number;
  author: { firstName: string; lastName: string };
}

const books = (JSON.parse(await Deno.readTextFile(Deno.env.get("BOOKS_FILE")!)) as Book[])
  .toSorted((a, b) => a.id - b.id);

const yoga = createYoga({
  schema: createSchema({
    typeDefs: /* GraphQL */ `
      type Query { books: [Book] }
      type Book { title: String! year: Int! author: Author! }
      type Author { firstName: String! lastName: String! }
    `,
    resolvers: { Query: { books: () => books } },
  }),
  graphiql: false,
  logging: false,
  landingPage: false,
});

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, yoga.fetch);
console.log(JSON.stringify({ msg: "listening", http: `http://127.0.0.1:${server.addr.port}` }));
Deno.addSignalListener("SIGTERM", () => server.shutdown().then(() => Deno.exit(0)));
