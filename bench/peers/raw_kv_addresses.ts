// The ceiling of the address book's reads: plain Deno.serve answering straight from Deno KV, as a
// user's minimal server would, on a copy of the KV file this project's server reads. Per request
// one `kv.list` or `kv.get` and one `JSON.stringify`; no validation, middleware or log.
//
// - `GET /addresses?limit=N`: one range read of N entries of the owner's index and
//   `{"addresses":[…],"nextCursor":…}`; a full page gets a cursor in this server's format (so the
//   bytes are the same as ours), any other page null.
// - `GET /addresses/{id}`: one read of the address's record, its address as JSON and an ETag from
//   the versionstamp; an address of another owner, or none, is 404.
//
// The two key prefixes are the layout of store/addresses/keys.ts (`ownerPrefix`, `addressKey`),
// written out here rather than imported: the peer shares the data, not the code. Since layout 4
// an index entry is `{etag, address}` and a record carries its version's `etag` (the ETag, no
// longer the versionstamp): the reads below still take layout 3's shapes until they follow.
// The owner is "" (auth off). KV_PATH names the file. Prints one JSON `listening` line, like the
// server.

const OWNER = "";
const OWNER_INDEX = ["owner_addresses", OWNER];
const RECORDS = "addresses";
const DEFAULT_LIMIT = 50;

interface Address {
  id: number;
  name: string;
  city: string;
  postalCode: string;
}

const kv = await Deno.openKv(Deno.env.get("KV_PATH")!);
const json = { "content-type": "application/json" };
const notFound = () => new Response('{"error":"not found"}', { status: 404, headers: json });

/** The cursor this project's server issues after a page ending at `id`. */
function cursorAfter(id: number): string {
  return btoa(`a1:${id}`).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

async function page(limit: number): Promise<Response> {
  const addresses: Address[] = [];
  for await (const e of kv.list<Address>({ prefix: OWNER_INDEX }, { limit })) {
    addresses.push(e.value);
  }
  const nextCursor = addresses.length === limit ? cursorAfter(addresses[limit - 1]!.id) : null;
  return new Response(JSON.stringify({ addresses, nextCursor }), { headers: json });
}

async function one(id: number): Promise<Response> {
  const entry = await kv.get<{ owner: string; address: Address }>([RECORDS, id]);
  if (entry.value === null || entry.value.owner !== OWNER) return notFound();
  return new Response(JSON.stringify(entry.value.address), {
    headers: { ...json, etag: `"${entry.versionstamp}"` },
  });
}

function handle(request: Request): Response | Promise<Response> {
  const url = new URL(request.url);
  if (request.method !== "GET") return notFound();
  if (url.pathname === "/addresses") {
    const limit = Number(url.searchParams.get("limit") ?? DEFAULT_LIMIT);
    return Number.isInteger(limit) && limit >= 1 && limit <= 500 ? page(limit) : notFound();
  }
  const id = /^\/addresses\/([1-9][0-9]{0,15})$/.exec(url.pathname)?.[1];
  return id === undefined ? notFound() : one(Number(id));
}

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handle);
console.log(JSON.stringify({ msg: "listening", http: `http://127.0.0.1:${server.addr.port}` }));
Deno.addSignalListener("SIGTERM", () => server.shutdown().then(() => Deno.exit(0)));
