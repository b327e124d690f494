/** The REST fuzz invariants, shared by the suites that send REST requests. */
import assert from "node:assert/strict";
import {
  assertDetailedErrorBody,
  assertGraphqlErrors,
  assertNoInternals,
  assertProblemBody,
} from "./fuzz.ts";
import type { HttpCase } from "./fuzz_http.ts";
import type { Address } from "./requests.ts";

export type { Address };

/** The request as fetch would send it, or undefined when fetch itself refuses its parts. */
export function requestOf(base: string, c: HttpCase): Request | undefined {
  try {
    return new Request(base + c.path, {
      method: c.method,
      headers: c.headers,
      body: c.body,
      redirect: "manual",
    });
  } catch {
    return undefined;
  }
}

/**
 * The path the server receives: the URL parser resolves dot segments, `%2e%2e` included, so
 * `/addresses/%2e%2e` is a request for `/`.
 */
export function routeOf(path: string): string {
  return new URL("http://fuzz.invalid" + path).pathname;
}

/** Size of the request head: over about 64 KiB the HTTP layer refuses it before the app. */
function headBytes(c: HttpCase): number {
  return c.path.length +
    Object.entries(c.headers).reduce((n, [k, v]) => n + k.length + v.length, 0);
}

function isJsonType(type: string | null, essence: string): boolean {
  return type !== null && type.split(";")[0]!.trim().toLowerCase() === essence;
}

/** Checks one answer against the invariants; returns the parsed JSON body when there is one. */
export function checkAnswer(c: HttpCase, res: Response, text: string): unknown {
  const where = `${c.method} ${c.path.slice(0, 120)} -> ${res.status}`;
  assert.ok(
    res.status < 500 || connectProtocolStatus(c, res.status, text),
    `${where}: server error ${text.slice(0, 300)}`,
  );
  assertNoInternals(text, where);
  const type = res.headers.get("content-type");
  if (res.status === 400 && text === "" && headBytes(c) > 48_000) return undefined;
  assert.ok(res.headers.get("x-request-id"), `${where}: no X-Request-Id`);
  if (res.status < 400 || c.method === "HEAD" || res.status === 304) return parse(text);
  const route = routeOf(c.path);
  const body = parse(text);
  if (isJsonType(type, "application/problem+json")) {
    assertProblemBody(body, res.status, where);
  } else if (route === "/graphql" && body && (body as { errors?: unknown[] }).errors?.[0]) {
    const first = (body as { errors: Record<string, unknown>[] }).errors[0]!;
    if ("extensions" in first) assertGraphqlErrors(body, where);
    else assertDetailedErrorBody(body, where);
  } else if (
    route.startsWith("/books.v1.") && typeof (body as { code?: unknown })?.code === "string"
  ) {
    assert.equal(typeof (body as { message?: unknown }).message, "string", where);
  } else {
    assert.ok(
      isJsonType(type, "application/json"),
      `${where}: error with content-type ${type}: ${text.slice(0, 200)}`,
    );
    assertDetailedErrorBody(body, where);
  }
  return body;
}

/**
 * The Connect protocol fixes the HTTP status of two codes a client can cause: `unimplemented`
 * (an unknown compression, for example) is 501 and `deadline_exceeded` (its own timeout) 504.
 * Connect clients read those; they are the protocol's answer, not a server fault.
 */
function connectProtocolStatus(c: HttpCase, status: number, text: string): boolean {
  if (!c.path.startsWith("/books.v1.")) return false;
  const code = (parse(text) as { code?: unknown } | undefined)?.code;
  return (status === 501 && code === "unimplemented") ||
    (status === 504 && code === "deadline_exceeded");
}

function parse(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Applies a successful write to the model; the server's list must then equal it. */
export function applyWrite(
  model: Map<number, Address>,
  c: HttpCase,
  res: { status: number; headers: Headers },
  body: unknown,
) {
  const status = res.status;
  const route = routeOf(c.path);
  if (route !== "/addresses" && !route.startsWith("/addresses/")) return;
  if (status >= 300) return;
  if (c.method === "GET" || c.method === "HEAD" || c.method === "OPTIONS") return;
  const where = `${c.method} ${route.slice(0, 80)} -> ${status}`;
  if (c.method === "DELETE" && route === "/addresses") {
    // The caller's whole address book erased (If-Match: *).
    assert.equal(status, 204, where);
    model.clear();
    return;
  }
  if (c.method === "DELETE") {
    assert.equal(status, 204, where);
    const id = Number(decodeURIComponent(route.slice("/addresses/".length)));
    assert.ok(model.delete(id), `${where}: deleted an id the model does not hold`);
    return;
  }
  // The same Idempotency-Key and body again: the first answer replayed, nothing written.
  if (c.method === "POST" && res.headers.get("idempotent-replayed") === "true") return;
  const address = body as Address;
  assert.ok(Number.isSafeInteger(address?.id), `${where}: a write answered without an address`);
  if (c.method === "POST") assert.ok(!model.has(address.id), `${where}: POST reused id`);
  model.set(address.id, address);
}
