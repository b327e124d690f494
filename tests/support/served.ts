import assert from "node:assert/strict";
import { toJson } from "@bufbuild/protobuf";
import type { Transport } from "@connectrpc/connect";
import { BooksResponseSchema } from "../../rpc/gen/books/v1/books_pb.ts";
import { checkContract } from "./contract.ts";
import {
  childDenoFlags,
  freePort,
  spawnDeno,
  type Spawned,
  untilStatus,
  waitFor,
  withChildFlags,
} from "./process.ts";
import { addressBook, graphql, named } from "./requests.ts";
import { booksClient, closeClientsOf, connectTransport, grpcWebTransport } from "./rpc_clients.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** `main.ts` served by `deno serve` as its own process. */
interface ServedProcess extends Spawned {
  baseUrl: string;
}

/**
 * Runs `deno serve <permissions> main.ts` on a free port (deno serve cannot report a port 0
 * binding to its parent) and waits until `/readyz` answers 200 and every worker has written its
 * `listening` line.
 */
export async function serveMain(options: {
  permissions: string[];
  env?: Record<string, string>;
  /** `--parallel` with this many workers (DENO_JOBS). */
  workers?: number;
  /** Extra flags before the permissions, e.g. `--location`. */
  flags?: string[];
  cwd?: string;
}): Promise<ServedProcess> {
  const port = freePort();
  const workers = options.workers ?? 1;
  const args = [
    "serve",
    "--config",
    `${ROOT}deno.json`,
    "--port",
    String(port),
    "--host",
    "127.0.0.1",
    ...(options.workers === undefined ? [] : ["--parallel"]),
    ...childDenoFlags(),
    ...(options.flags ?? []),
    ...options.permissions,
    `${ROOT}main.ts`,
  ];
  const env = withChildFlags({
    ...options.env,
    ...(options.workers ? { DENO_JOBS: String(workers) } : {}),
  });
  const process = spawnDeno(args, env, options.cwd);
  const baseUrl = `http://127.0.0.1:${port}`;
  checkContract(baseUrl);
  try {
    // Each worker opens storage on start-up; readiness answers once the answering one has.
    await untilStatus(`${baseUrl}/readyz`, 200, "readiness");
    await waitFor(
      `${workers} listening line(s)`,
      () => process.lines().filter((l) => l.msg === "listening").length >= workers || undefined,
    );
  } catch (error) {
    await process.stop();
    throw new Error(`${(error as Error).message}\n${process.output()}`);
  }
  const stop = async (signal?: Deno.Signal) => {
    await closeClientsOf(baseUrl);
    return await process.stop(signal);
  };
  return { ...process, baseUrl, stop };
}

/** The catalogue over every protocol one port carries; returns the number of books. */
export async function exerciseOnePort(baseUrl: string): Promise<number> {
  const rest = await fetch(`${baseUrl}/rest/books`);
  assert.equal(rest.status, 200);
  assert.ok(rest.headers.get("x-request-id"));
  const books = await rest.json();
  assert.ok(books.length >= 25);

  const answer = await graphql(baseUrl, {
    query: "{ books { title year author { firstName lastName } } }",
  });
  assert.equal(answer.status, 200);
  const result = await answer.json();
  assert.equal(result.errors, undefined);
  assert.deepEqual(result.data.books, books.map(({ id: _, ...rest }: { id: number }) => rest));

  const bad = await graphql(baseUrl, { query: "{ nope }" });
  assert.ok(bad.status === 200 || bad.status === 400, `GraphQL validation error: ${bad.status}`);
  assert.equal(typeof (await bad.json()).errors[0].extensions.code, "string");

  const transports: [string, Transport][] = [
    ["Connect (binary)", connectTransport(baseUrl, "1.1")],
    ["Connect (JSON)", connectTransport(baseUrl, "1.1", { json: true })],
    ["gRPC-Web", grpcWebTransport(baseUrl, "1.1")],
  ];
  for (const [name, transport] of transports) {
    const response = await booksClient(transport).books({});
    assert.equal(response.book.length, books.length, name);
    assert.deepEqual(
      toJson(BooksResponseSchema, response),
      { book: books.map(({ id: _, ...rest }: { id: number }) => rest) },
      name,
    );
  }
  return books.length;
}

/** Creates an address over REST and reads it back; returns its id. */
export async function createAndRead(baseUrl: string, name: string): Promise<number> {
  const api = addressBook(baseUrl);
  const created = await api.create(named(name));
  assert.equal(created.status, 201, await created.clone().text());
  const body = await created.json();
  const read = await api.get(body.id);
  assert.equal(read.status, 200);
  assert.deepEqual(await read.json(), body);
  const missing = await api.get(999999999);
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
  return body.id;
}
