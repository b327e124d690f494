// The ceiling of the address book's reads: plain Deno.serve answering straight from Deno KV, as a
// user's minimal server would, on a copy of the KV file this project's server reads. Per request
// one `kv.list` or `kv.get` and one `JSON.stringify`; no validation, middleware or log.
//
// - `GET /addresses?limit=N`: one range read of N entries of the owner's index and
//   `{"addresses":[…],"nextCursor":…}`; a full page gets a page token sealed as this server seals
//   one, with the key the KV holds (address_book_text.ts: so the bytes are the same as ours), any
//   other page null.
// - `GET /addresses/{id}`: one read of the address's record, its address as JSON and the ETag
//   stored with it; an address of another owner, or none, is 404.
//
// The keys and values are layouts 4 and 5 of store/addresses/keys.ts (`ownerPrefix` → `{etag, address}`,
// `addressKey` → `{v, owner, address, etag}`), written out here rather than imported: the peer
// shares the data, not the code. The owner is "" (auth off). KV_PATH names the file. Prints one
// JSON `listening` line, like the server.
import { openCursors } from "./address_book_text.ts";

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
const cursors = await openCursors(kv, OWNER);
const json = { "content-type": "application/json" };
const notFound = () => new Response('{"error":"not found"}', { status: 404, headers: json });

async function page(limit: number): Promise<Response> {
  const addresses: Address[] = [];
  for await (const e of kv.list<{ address: Address }>({ prefix: OWNER_INDEX }, { limit })) {
    addresses.push(e.value.address);
  }
  const nextCursor = addresses.length === limit ? cursors.after(addresses[limit - 1]!.id) : null;
  return new Response(JSON.stringify({ addresses, nextCursor }), { headers: json });
}

async function one(id: number): Promise<Response> {
  const entry = await kv.get<{ owner: string; address: Address; etag: string }>([RECORDS, id]);
  if (entry.value === null || entry.value.owner !== OWNER) return notFound();
  return new Response(JSON.stringify(entry.value.address), {
    headers: { ...json, etag: entry.value.etag },
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
