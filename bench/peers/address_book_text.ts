// The matrix ceilings' own strings, made as this server's store makes them (store/addresses/keys.ts,
// page_tokens.ts and lib/http/etag.ts describe the formats; written out here rather than imported:
// the peers share the data, not the code): the ETag of a version, 128 random bits made at each
// write and stored with it (layouts 4 and 5), and the page token, one AES-256 block of the position and a
// digest of the listing and owner, sealed with the key the KV holds at `["meta", "page_token_key"]`.
// So a ceiling does the same work per answer as this server and, on a copy of the same KV, answers
// the same bytes.
import { Buffer } from "node:buffer";
import { createCipheriv, createDecipheriv, createHash, timingSafeEqual } from "node:crypto";

const TOKEN_KEY = ["meta", "page_token_key"];
const LISTING = "addresses.v1/list";
const ID_BYTES = 7;
const BLOCK = 16;

/** A new strong ETag for a version about to be stored: 16 random bytes, base64url, quoted. */
export function newEtag(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return `"${Buffer.from(bytes.buffer).toString("base64url")}"`;
}

/** The page tokens of one owner's listing on a KV. */
export interface Cursors {
  /** The token of a page that ends at `id`. */
  after(id: number): string;
  /** The id a token resumes after; 0 for none (the first page), NaN for one not issued here. */
  position(token: string | null | undefined): number;
}

/** Reads the KV's page token key (made and stored first if the KV has none, as the store does). */
async function tokenKey(kv: Deno.Kv): Promise<Uint8Array> {
  for (;;) {
    const entry = await kv.get<{ v: 1; aes: Uint8Array }>(TOKEN_KEY);
    if (entry.value !== null) return entry.value.aes;
    const aes = crypto.getRandomValues(new Uint8Array(32));
    await kv.atomic().check(entry).set(TOKEN_KEY, { v: 1, aes }).commit();
  }
}

/** The page tokens of `owner`'s listing on `kv`. */
export async function openCursors(kv: Deno.Kv, owner: string): Promise<Cursors> {
  const key = await tokenKey(kv);
  const seal = createCipheriv("aes-256-ecb", key, null).setAutoPadding(false);
  const open = createDecipheriv("aes-256-ecb", key, null).setAutoPadding(false);
  const digest = createHash("sha256").update(`${LISTING}\0${owner}`).digest()
    .subarray(0, BLOCK - ID_BYTES);
  return {
    after(id) {
      const block = new Uint8Array(BLOCK);
      for (let i = ID_BYTES - 1, rest = id; i >= 0; i--, rest = Math.floor(rest / 256)) {
        block[i] = rest % 256;
      }
      block.set(digest, ID_BYTES);
      return seal.update(block).toString("base64url");
    },
    position(token) {
      if (!token) return 0;
      const bytes = Buffer.from(token, "base64url");
      if (bytes.length !== BLOCK) return NaN;
      const block = open.update(bytes);
      if (!timingSafeEqual(block.subarray(ID_BYTES), digest)) return NaN;
      let id = 0;
      for (let i = 0; i < ID_BYTES; i++) id = id * 256 + block[i]!;
      return id;
    },
  };
}
