// The stack's own floor for a read by id over GraphQL: graphql-js's schema and validation and
// graphql-jit's compiled execution (the libraries this server's endpoint is built on) on plain
// Deno.serve, with one query field, `address(id)`, doing the same KV read as the matrix's ceiling
// (address_book_kv.ts), each document parsed, validated and compiled once (the first time its
// text is seen), sending the same headers (HEADERS, read by answer_headers.ts), with
// nothing of this server's: no access log, gate, limits or negotiation. So ours ÷ it is what this
// server adds over the libraries, and it ÷ the ceiling what they cost. KV_PATH names a copy of
// the KV file. Prints one JSON `listening` line, like the server.
import { buildSchema, type ExecutionResult, parse, validate } from "graphql";
import { type CompiledQuery, compileQuery, isCompiledQuery } from "graphql-jit";
import { ADDRESS_FIELDS } from "../../lib/address.ts";
import { openAddressBook } from "./address_book_kv.ts";
import { answerHeaders } from "./answer_headers.ts";

const kv = await Deno.openKv(Deno.env.get("KV_PATH")!);
const book = await openAddressBook(kv, []);
const headersOf = answerHeaders();

// The address's fields from its one table (every field a string), so the documents this server's
// clients send, which select every field, stay valid here when a field is added.
const fields = Object.entries(ADDRESS_FIELDS as Record<string, { optional?: boolean }>)
  .map(([name, field]) => `${name}: String${field.optional ? "" : "!"}`);
const schema = buildSchema(`
  type Address { id: ID! ${fields.join(" ")} etag: String! }
  type Query { address(id: ID!): Address }
`);
// graphql-jit calls a field's resolver, not a function found on the root value.
schema.getQueryType()!.getFields().address!.resolve = async (_, { id }) => {
  const stored = await book.get(Number(id));
  return stored && { ...stored.address, etag: stored.etag };
};

type Compiled = CompiledQuery | ExecutionResult;
const compiled = new Map<string, Compiled>();

function compiledOf(query: string, operationName: string | undefined): Compiled {
  let known = compiled.get(query);
  if (known === undefined) {
    const document = parse(query);
    const errors = validate(schema, document);
    known = errors.length > 0 ? { errors } : compileQuery(schema, document, operationName);
    compiled.set(query, known);
  }
  return known;
}

async function handle(request: Request): Promise<Response> {
  const { query, variables, operationName } = await request.json();
  const compiled = compiledOf(query, operationName);
  const result = isCompiledQuery(compiled)
    ? await compiled.query(undefined, undefined, variables)
    : compiled;
  return new Response(JSON.stringify(result), { headers: headersOf() });
}

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handle);
console.log(JSON.stringify({ msg: "listening", http: `http://127.0.0.1:${server.addr.port}` }));
