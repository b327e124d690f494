// The ceiling of GraphQL's page of addresses: plain Deno.serve answering `POST /graphql` straight
// from Deno KV, as a user's minimal server would, on a copy of the KV file this project's server
// reads. Per request: the body read and parsed as JSON, one `kv.list` of `variables.first`
// entries of the owner's index, and the answer the typed `Addresses` document gets
// (clients/graphql/addresses.graphql: each edge's cursor and node, pageInfo), with the headers
// ours sends (content type, a request id, nosniff). No parsing of the query, validation,
// middleware, log or gate; cursors are 22 characters of base64url of the id, not enciphered.
//
// The owner index's layout (layouts 4 and 5: `["owner_addresses", owner, id]` → `{etag, address}`) is
// written out here rather than imported: the peer shares the data, not the code. The owner is ""
// (auth off). KV_PATH names the file. Prints one JSON `listening` line, like the server.

const OWNER_INDEX = ["owner_addresses", ""];

interface IndexEntry {
  etag: string;
  address: { id: number } & Record<string, unknown>;
}

const kv = await Deno.openKv(Deno.env.get("KV_PATH")!);

function cursorOf(id: number): string {
  return btoa(String(id).padStart(16, "0")).replaceAll("=", "");
}

async function page(request: Request): Promise<Response> {
  const body = JSON.parse(await request.text());
  const first = Number(body?.variables?.first ?? 50);
  const edges = [];
  for await (const e of kv.list<IndexEntry>({ prefix: OWNER_INDEX }, { limit: first })) {
    const { id, ...fields } = e.value.address;
    edges.push({ cursor: cursorOf(id), node: { id: String(id), ...fields, etag: e.value.etag } });
  }
  const endCursor = edges.at(-1)?.cursor ?? null;
  const data = {
    addresses: { edges, pageInfo: { hasNextPage: edges.length === first, endCursor } },
  };
  return new Response(JSON.stringify({ data }), {
    headers: {
      "content-type": "application/json",
      "x-request-id": crypto.randomUUID(),
      "x-content-type-options": "nosniff",
    },
  });
}

const server = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen() {} },
  (request) =>
    request.method === "POST" && new URL(request.url).pathname === "/graphql"
      ? page(request)
      : new Response("not found", { status: 404 }),
);
console.log(JSON.stringify({ msg: "listening", http: `http://127.0.0.1:${server.addr.port}` }));
Deno.addSignalListener("SIGTERM", () => server.shutdown().then(() => Deno.exit(0)));
