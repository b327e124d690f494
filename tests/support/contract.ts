/**
 * The OpenAPI document as a contract every test holds the server to. `checkContract(baseUrl)`
 * (called by the helpers that start a server: tests/support/server.ts, served.ts) wraps
 * `fetch` once per test module; every answer from a registered server to a documented
 * operation (method and path template) is then checked before the test sees it: its status is
 * documented for that operation, its content type for that status, its body valid against the
 * schema (JSON Schema 2020-12, Ajv) and its documented required headers present and valid. A
 * violation fails the fetch, and so the test, with what differs. Requests to undocumented
 * paths or methods (404 `route-not-found`, 405, GraphQL, Connect) pass through unchecked.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import formats from "ajv-formats";
import { servedOpenApiText } from "../../tools/openapi_document.ts";

/** The parts of an OpenAPI 3.1 document the check reads. */
interface Document {
  paths: Record<string, Record<string, Operation | unknown>>;
}

interface Operation {
  operationId?: string;
  responses: Record<string, ResponseObject>;
}

interface ResponseObject {
  $ref?: string;
  headers?: Record<string, { required?: boolean; schema?: unknown }>;
  content?: Record<string, { schema?: unknown }>;
}

/** A documented operation: where it is in the document and how its path template matches. */
interface Route {
  method: string;
  template: string;
  pattern: RegExp;
  /** Characters outside `{…}`: the most literal template wins (`/addresses/export` over `{id}`). */
  literal: number;
  pointer: string;
  operation: Operation;
}

/** The document, its operations and a validator over it. */
interface Contract {
  document: Document;
  routes: Route[];
  ajv: Ajv2020;
}

/** A documented answer the server gave that the document does not describe. */
export class ContractViolation extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ContractViolation";
  }
}

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const DOCUMENT_ID = "openapi.json";

/** JSON pointer escaping (RFC 6901) of one reference token. */
function escapePointer(token: string): string {
  return token.replaceAll("~", "~0").replaceAll("/", "~1");
}

/** The value a local reference (`#/components/…`) names in the document. */
function resolve(document: Document, ref: string): unknown {
  let value: unknown = document;
  for (const token of ref.replace(/^#\//, "").split("/")) {
    const key = token.replaceAll("~1", "/").replaceAll("~0", "~");
    value = (value as Record<string, unknown> | undefined)?.[key];
  }
  if (value === undefined) throw new ContractViolation(`the document has nothing at ${ref}`);
  return value;
}

function templatePattern(template: string): RegExp {
  const source = template.split(/(\{[^}]+\})/).map((part) =>
    part.startsWith("{") ? "([^/]+)" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  ).join("");
  return new RegExp(`^${source}$`);
}

/** Reads the document's operations and prepares Ajv over the whole document. */
export function contractOf(document: Document): Contract {
  const routes: Route[] = [];
  for (const [template, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue;
      routes.push({
        method: method.toUpperCase(),
        template,
        pattern: templatePattern(template),
        literal: template.replace(/\{[^}]+\}/g, "").length,
        pointer: `#/paths/${escapePointer(template)}/${method}`,
        operation: operation as Operation,
      });
    }
  }
  routes.sort((a, b) => b.literal - a.literal);
  // OpenAPI 3.1 schemas are JSON Schema 2020-12; `example` and the document's own members are
  // not keywords, so strict mode is off. Patterns are compiled with Unicode semantics (Ajv's
  // default, as JSON Schema specifies).
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  // ajv-formats is CommonJS: its plugin is both the module and its `default`.
  formats.default(ajv);
  ajv.addSchema(document, DOCUMENT_ID);
  return { document, routes, ajv };
}

/** The operation a request names, or undefined when the document has none for it. */
export function routeFor(contract: Contract, method: string, path: string): Route | undefined {
  // HEAD is answered by the GET operation, without a body.
  const wanted = method === "HEAD" ? "GET" : method;
  return contract.routes.find((r) => r.method === wanted && r.pattern.test(path));
}

const validators = new Map<string, ValidateFunction>();

/** A validator of the schema at `pointer` (a `#/…` pointer into the document). */
export function validatorAt(contract: Contract, pointer: string): ValidateFunction {
  let validate = validators.get(pointer);
  if (validate === undefined) {
    validate = contract.ajv.compile({ $ref: `${DOCUMENT_ID}${pointer}` });
    validators.set(pointer, validate);
  }
  return validate;
}

const NDJSON = "application/x-ndjson";

function essence(type: string): string {
  return type.split(";")[0]!.trim().toLowerCase();
}

function isJson(type: string): boolean {
  return type === "application/json" || type.endsWith("+json");
}

function errorsOf(validate: ValidateFunction): string {
  return (validate.errors ?? []).slice(0, 5)
    .map((e) => `${e.instancePath || "(body)"} ${e.message}`).join("; ");
}

function isRuntimeRefusal(answer: Answer): boolean {
  return answer.status === 400 && answer.body.length === 0 &&
    answer.headers.get("content-type") === null && answer.headers.get("x-request-id") === null;
}

/** What one answer looked like, for checking. */
interface Answer {
  method: string;
  path: string;
  status: number;
  headers: Headers;
  body: Uint8Array;
}

/**
 * Checks one answer against its operation; throws ContractViolation naming what differs.
 * Returns the operation's id, or undefined when the request is not a documented operation.
 */
export function checkAnswer(contract: Contract, answer: Answer): string | undefined {
  // Deno's HTTP layer refuses a request head it will not read (about 64 KiB) with a bare 400
  // before the application sees the request: not an answer of this API.
  if (isRuntimeRefusal(answer)) return undefined;
  const route = routeFor(contract, answer.method, answer.path);
  if (route === undefined) return undefined;
  const name = `${answer.method} ${answer.path.slice(0, 200)} (${
    route.operation.operationId ?? route.template
  })`;
  const responses = route.operation.responses;
  const status = String(answer.status);
  const key = [status, `${status[0]}XX`, "default"].find((k) => Object.hasOwn(responses, k));
  if (key === undefined) {
    const text = new TextDecoder().decode(answer.body).slice(0, 300);
    throw new ContractViolation(
      `${name} answered ${status}, which the document does not list (${
        Object.keys(responses).join(", ")
      }): ${text}`,
    );
  }
  let response = responses[key]!;
  let base = `${route.pointer}/responses/${key}`;
  if (response.$ref !== undefined) {
    base = response.$ref;
    response = resolve(contract.document, response.$ref) as ResponseObject;
  }
  for (const [header, spec] of Object.entries(response.headers ?? {})) {
    const value = answer.headers.get(header);
    if (value === null) {
      if (spec.required) {
        throw new ContractViolation(`${name} ${status} lacks the required header ${header}`);
      }
      continue;
    }
    if (spec.schema === undefined) continue;
    const validate = validatorAt(contract, `${base}/headers/${escapePointer(header)}/schema`);
    // A header is text; a documented integer is checked as the number it spells.
    const asNumber = value.trim() === "" ? NaN : Number(value);
    if (!validate(value) && !validate(asNumber)) {
      throw new ContractViolation(
        `${name} ${status}: header ${header}: ${value} is not as documented: ${errorsOf(validate)}`,
      );
    }
  }
  const content = response.content;
  const hasBody = answer.method !== "HEAD";
  if (content === undefined || Object.keys(content).length === 0) {
    if (answer.body.length > 0) {
      throw new ContractViolation(`${name} ${status} has a body; the document says none`);
    }
    return route.operation.operationId ?? route.template;
  }
  const header = answer.headers.get("content-type");
  if (header === null) {
    if (!hasBody) return route.operation.operationId ?? route.template;
    throw new ContractViolation(`${name} ${status} has no Content-Type`);
  }
  const type = essence(header);
  const mediaKey = Object.keys(content).find((k) => essence(k) === type);
  if (mediaKey === undefined) {
    throw new ContractViolation(
      `${name} ${status} came as ${header}, which the document does not list (${
        Object.keys(content).join(", ")
      })`,
    );
  }
  if (!hasBody || content[mediaKey]!.schema === undefined || type === "text/event-stream") {
    return route.operation.operationId ?? route.template;
  }
  const text = new TextDecoder().decode(answer.body);
  const validate = validatorAt(contract, `${base}/content/${escapePointer(mediaKey)}/schema`);
  if (type === NDJSON) {
    // A sequence of JSON texts: the schema is that of each line (as OpenAPI 3.2's itemSchema).
    for (const line of text.split("\n")) {
      if (line === "") continue;
      let item: unknown;
      try {
        item = JSON.parse(line);
      } catch {
        throw new ContractViolation(`${name} ${status} (${type}) has a line that is not JSON`);
      }
      if (!validate(item)) {
        throw new ContractViolation(
          `${name} ${status} (${type}): a line does not match the schema: ${errorsOf(validate)}`,
        );
      }
    }
    return route.operation.operationId ?? route.template;
  }
  let body: unknown = text;
  if (isJson(type)) {
    try {
      body = JSON.parse(text);
    } catch {
      throw new ContractViolation(`${name} ${status} (${type}) is not JSON: ${text.slice(0, 200)}`);
    }
  }
  if (!validate(body)) {
    throw new ContractViolation(
      `${name} ${status} (${type}) does not match its schema: ${errorsOf(validate)}; body: ${
        text.slice(0, 300)
      }`,
    );
  }
  return route.operation.operationId ?? route.template;
}

let contract: Promise<Contract> | undefined;

/** The contract of the served document (built once per test module). */
function servedContract(): Promise<Contract> {
  contract ??= servedOpenApiText().then((text) => contractOf(JSON.parse(text)));
  return contract;
}

const origins = new Set<string>();
const tally = { validated: 0, operations: new Map<string, number>() };
let original: typeof fetch | undefined;

// Fetch normalizes only these methods' case (Fetch standard); `patch` goes out as `patch`,
// which is not PATCH: the server answers 405 and the document has no such operation.
const NORMALIZED = new Set(["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"]);

function requestOf(input: RequestInfo | URL, init?: RequestInit): { method: string; url: URL } {
  const url = new URL(input instanceof Request ? input.url : input);
  const method = init?.method ?? (input instanceof Request ? input.method : "GET");
  const upper = method.toUpperCase();
  return { method: NORMALIZED.has(upper) ? upper : method, url };
}

const NULL_BODY = new Set([101, 103, 204, 205, 304]);

async function checkedFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const response = await original!(input, init);
  const { method, url } = requestOf(input, init);
  if (!origins.has(url.origin)) return response;
  const checked = await servedContract();
  if (routeFor(checked, method, url.pathname) === undefined) return response;
  // A stream of events is read by the test as it comes: its status, headers and media type are
  // checked here, its events by the test (tests/feed).
  const streamed = essence(response.headers.get("content-type") ?? "") === "text/event-stream";
  const body = streamed ? new Uint8Array() : new Uint8Array(await response.arrayBuffer());
  const operation = checkAnswer(checked, {
    method,
    path: url.pathname,
    status: response.status,
    headers: response.headers,
    body,
  })!;
  tally.validated++;
  const key = `${operation} ${response.status}`;
  tally.operations.set(key, (tally.operations.get(key) ?? 0) + 1);
  if (streamed) return response;
  // The test reads the answer as it came; only the body was read here first.
  const copy = new Response(NULL_BODY.has(response.status) ? null : body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  Object.defineProperty(copy, "url", { value: response.url });
  return copy;
}

/**
 * Holds every answer from the server at `baseUrl` to the document: `fetch` is wrapped (once per
 * test module) so that tests need not do anything else. At the end of the module one line says
 * how many answers were checked (`.ci/run` adds them up).
 */
export function checkContract(baseUrl: string): void {
  origins.add(new URL(baseUrl).origin);
  if (original !== undefined) return;
  // Built now, while the server starts, rather than on its first answer.
  servedContract().catch(() => {});
  original = globalThis.fetch;
  globalThis.fetch = checkedFetch;
  globalThis.addEventListener("unload", () => {
    if (tally.validated === 0) return;
    console.log(
      `contract: ${tally.validated} REST answers checked against /openapi.json ` +
        `(${tally.operations.size} operation-status pairs)`,
    );
  });
}
