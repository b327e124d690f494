import { Buffer } from "node:buffer";
import { createCipheriv, createDecipheriv, createHash, timingSafeEqual } from "node:crypto";
import { AppError } from "../../lib/errors.ts";
import { withKvRetry } from "../kv/retry.ts";
import { MAX_ID } from "./keys.ts";

/**
 * Page tokens of an owner's listing (REST's `cursor`, GraphQL's `after`, gRPC's `page_token`;
 * AIP-158): opaque, unforgeable, bound to the owner and the listing, and valid only on the KV
 * whose key made them. docs/storage.md has the design and why.
 *
 * A token is one AES-256 block, base64url (22 characters): the position (the last id of the
 * page, 7 bytes) followed by 9 bytes of SHA-256 of the listing's name and the owner, enciphered
 * with the KV's key. Deciphering anything but a token this KV made for this owner and listing
 * gives 16 bytes whose last 9 match that digest with probability 2^-72: an edited token, another
 * owner's, another KV's and a made-up one are all refused alike (encode-then-encipher: AES is a
 * permutation of the block, so no IV is needed and none can repeat). One block per token, through
 * ciphers made once: about 2 µs a page.
 */

/** `["meta", "page_token_key"]` → `{v: 1, aes: Uint8Array(32)}`: made once per KV, kept. */
export const PAGE_TOKEN_KEY: Deno.KvKey = ["meta", "page_token_key"];

interface StoredKey {
  v: 1;
  aes: Uint8Array;
}

/** The listing a token resumes; part of the digest, so a token of another listing is refused. */
const LISTING = "addresses.v1/list";
const ID_BYTES = 7;
const BLOCK = 16;
const TOKEN = /^[A-Za-z0-9_-]{22}$/;

/** What a listing needs of its tokens. */
export interface PageTokens {
  /** The token that resumes `owner`'s listing after address `id`. */
  after(owner: string, id: number): Promise<string>;
  /**
   * The tokens that resume `owner`'s listing after each of `ids` (a GraphQL page's edges), the
   * blocks enciphered in one pass.
   */
  afterEach(owner: string, ids: readonly number[]): Promise<string[]>;
  /** The id a token of `owner`'s listing resumes after; else 400 `invalid-parameter`. */
  position(owner: string, token: string): Promise<number>;
  /** Reads (or makes, once per KV) the key; a failure is retried on the next use. */
  ready(): Promise<void>;
}

function isStoredKey(value: unknown): value is StoredKey {
  const key = value as StoredKey;
  return typeof key === "object" && key !== null && key.v === 1 &&
    key.aes instanceof Uint8Array && key.aes.length === 32;
}

/**
 * The KV's key: read, or made and stored with a check that none exists, so every process on the
 * KV uses the one that was stored first.
 */
async function loadKey(kv: Deno.Kv): Promise<Uint8Array> {
  for (;;) {
    const entry = await withKvRetry(() => kv.get<StoredKey>(PAGE_TOKEN_KEY));
    if (entry.value !== null) {
      if (!isStoredKey(entry.value)) throw new Error("the KV's page token key is not one");
      return entry.value.aes;
    }
    const aes = new Uint8Array(32);
    crypto.getRandomValues(aes);
    await withKvRetry(() =>
      kv.atomic().check(entry).set(PAGE_TOKEN_KEY, { v: 1, aes } satisfies StoredKey).commit()
    );
  }
}

function invalid(): AppError {
  return new AppError(
    "invalid-parameter",
    "Query parameter cursor is not a cursor this server issued.",
  );
}

/** What a kind of token resumes, and how a bad one is refused. */
export interface TokenKind {
  /** Part of the digest: a token of one kind is refused as another. */
  listing: string;
  /** The lowest position a token may hold. */
  first: number;
  invalid(): AppError;
}

const PAGES: TokenKind = { listing: LISTING, first: 1, invalid };

/**
 * The page tokens of the listings on `kv`, with its key (read or made at first use); with `kind`,
 * tokens of another position on the same key (the change feed's resume tokens).
 */
export function pageTokens(kv: Deno.Kv, kind: TokenKind = PAGES): PageTokens {
  let loading: Promise<{ seal: (b: Uint8Array) => Buffer; open: (b: Uint8Array) => Buffer }>;
  let loaded = false;
  const digests = new Map<string, Uint8Array>();

  function ciphers() {
    if (!loaded) {
      loaded = true;
      loading = loadKey(kv).then((key) => {
        // ECB on single blocks is the AES permutation itself; made once, reused (no state
        // carries over between whole blocks).
        const seal = createCipheriv("aes-256-ecb", key, null).setAutoPadding(false);
        const open = createDecipheriv("aes-256-ecb", key, null).setAutoPadding(false);
        return { seal: (b: Uint8Array) => seal.update(b), open: (b: Uint8Array) => open.update(b) };
      }, (error) => {
        loaded = false;
        throw error;
      });
    }
    return loading;
  }

  /** The listing's and owner's digest, kept for the owners seen lately. */
  function digestOf(owner: string): Uint8Array {
    let digest = digests.get(owner);
    if (digest === undefined) {
      digest = createHash("sha256").update(`${kind.listing}\0${owner}`).digest()
        .subarray(0, BLOCK - ID_BYTES);
      if (digests.size >= 1024) digests.clear();
      digests.set(owner, digest);
    }
    return digest;
  }

  /**
   * Each id's token. ECB enciphers each 16-byte block on its own, so the blocks of several tokens
   * go through the cipher in one call (one call per token cost about 1 µs each, most of a GraphQL
   * page's 51 cursors).
   */
  async function sealed(owner: string, ids: readonly number[]): Promise<string[]> {
    const { seal } = await ciphers();
    const blocks = new Uint8Array(BLOCK * ids.length);
    const digest = digestOf(owner);
    for (let n = 0; n < ids.length; n++) {
      const at = n * BLOCK;
      // 7 bytes, big-endian: ids are below 2^53.
      let rest = ids[n]!;
      for (let i = ID_BYTES - 1; i >= 0; i--) {
        blocks[at + i] = rest % 256;
        rest = Math.floor(rest / 256);
      }
      blocks.set(digest, at + ID_BYTES);
    }
    const out = seal(blocks);
    return ids.map((_, n) => out.toString("base64url", n * BLOCK, (n + 1) * BLOCK));
  }

  return {
    async after(owner, id) {
      return (await sealed(owner, [id]))[0]!;
    },
    afterEach: sealed,
    async position(owner, token) {
      if (!TOKEN.test(token)) throw kind.invalid();
      const bytes = Buffer.from(token, "base64url");
      // Base64url's last character has bits that decode to nothing: only the canonical spelling.
      if (bytes.length !== BLOCK || bytes.toString("base64url") !== token) throw kind.invalid();
      const { open } = await ciphers();
      const block = open(bytes);
      if (!timingSafeEqual(block.subarray(ID_BYTES), digestOf(owner))) throw kind.invalid();
      let id = 0;
      for (let i = 0; i < ID_BYTES; i++) id = id * 256 + block[i]!;
      if (id < kind.first || id > MAX_ID) throw kind.invalid();
      return id;
    },
    ready: async () => {
      await ciphers();
    },
  };
}
