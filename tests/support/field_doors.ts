/**
 * Sending the same header field lines, byte for byte, through every door of the server: HTTP/1.1
 * and HTTP/2 on the HTTP port (REST, GraphQL, Connect, gRPC-Web) and HTTP/2 on the gRPC port
 * (gRPC, gRPC-Web, Connect), over raw sockets so that no client library tidies the lines first
 * (repeats them, trims them, joins them). Used by the tests of how the `Authorization` field is
 * read (tests/security/auth_test.ts, tests/fuzz/fuzz_authorization_test.ts).
 */
import {
  answerOn,
  clientStart,
  connectRaw,
  Flag,
  frame,
  FrameType,
  headerBlock,
} from "./h2_raw.ts";
import { rawHttp1 } from "./raw_http.ts";

/** How a request reaches the server. */
export type Via = "http1" | "h2 http" | "h2 grpc";

/** One door: a call that needs `addresses:read` and answers with the caller's addresses. */
export interface FieldDoor {
  name: string;
  via: Via;
  method: string;
  path: string;
  headers: [string, string][];
  body?: Uint8Array;
  /** Whether the answer is a success, and a refusal's code and message as the protocol says. */
  read(status: number, fields: Headers, body: string): DoorAnswer;
}

/** What a door answered: a success with its body, or a refusal. */
export type DoorAnswer =
  | { ok: true; body: string }
  | { ok: false; code: string; message: string };

/** What came back over the wire. */
export interface RawAnswer {
  status: number;
  fields: Headers;
  body: string;
}

function restAnswer(status: number, _: Headers, body: string): DoorAnswer {
  if (status === 200) return { ok: true, body };
  const error = JSON.parse(body).errors[0];
  return { ok: false, code: `${status} ${error.error}`, message: error.detail };
}

function graphqlAnswer(status: number, _: Headers, body: string): DoorAnswer {
  const parsed = JSON.parse(body);
  if (status === 200 && parsed.errors === undefined) return { ok: true, body };
  const error = parsed.errors[0];
  return { ok: false, code: `${status} ${error.extensions.code}`, message: error.message };
}

function connectAnswer(status: number, _: Headers, body: string): DoorAnswer {
  if (status === 200) return { ok: true, body };
  const error = JSON.parse(body);
  return { ok: false, code: `${status} ${error.code}`, message: error.message };
}

function grpcAnswer(status: number, fields: Headers, body: string): DoorAnswer {
  const code = fields.get("grpc-status");
  if (status === 200 && (code === "0" || (code === null && body.length > 0))) {
    return { ok: true, body };
  }
  return {
    ok: false,
    code: `${status} grpc-status ${code}`,
    message: decodeURIComponent(fields.get("grpc-message") ?? ""),
  };
}

const LIST_PATH = "/addresses.v1.AddressService/ListAddresses";
const EMPTY_CALL = new Uint8Array(5);
const JSON_CALL = new TextEncoder().encode("{}");
const GRAPHQL_LIST = new TextEncoder().encode(
  JSON.stringify({ query: "{ addresses(first: 5) { edges { node { name } } } }" }),
);

/** Every door, each calling for the caller's addresses. */
export const FIELD_DOORS: readonly FieldDoor[] = [
  ...(["http1", "h2 http"] as const).flatMap((via): FieldDoor[] => [
    { name: "REST", via, method: "GET", path: "/addresses", headers: [], read: restAnswer },
    {
      name: "GraphQL",
      via,
      method: "POST",
      path: "/graphql",
      headers: [["content-type", "application/json"]],
      body: GRAPHQL_LIST,
      read: graphqlAnswer,
    },
    {
      name: "Connect",
      via,
      method: "POST",
      path: LIST_PATH,
      headers: [["content-type", "application/json"]],
      body: JSON_CALL,
      read: connectAnswer,
    },
    {
      name: "gRPC-Web",
      via,
      method: "POST",
      path: LIST_PATH,
      headers: [["content-type", "application/grpc-web+proto"]],
      body: EMPTY_CALL,
      read: grpcAnswer,
    },
  ]),
  ...([
    ["gRPC", "application/grpc", EMPTY_CALL, grpcAnswer],
    ["gRPC-Web", "application/grpc-web+proto", EMPTY_CALL, grpcAnswer],
    ["Connect", "application/json", JSON_CALL, connectAnswer],
  ] as const).map(([name, type, body, read]): FieldDoor => ({
    name,
    via: "h2 grpc",
    method: "POST",
    path: LIST_PATH,
    headers: [["content-type", type], ["te", "trailers"]],
    body,
    read,
  })),
];

/** Sends `door`'s call with `extra` field lines added exactly as given, and reads the answer. */
export async function sendThrough(
  urls: { httpUrl: string; grpcUrl: string },
  door: FieldDoor,
  extra: [string, string][],
): Promise<RawAnswer> {
  const fields: [string, string][] = [...door.headers, ...extra];
  if (door.via === "http1") {
    const res = await rawHttp1(urls.httpUrl, {
      method: door.method,
      target: door.path,
      headers: fields,
      ...(door.body ? { body: door.body } : {}),
    });
    return { status: res.status, fields: res.headers, body: res.body };
  }
  const conn = await connectRaw(door.via === "h2 grpc" ? urls.grpcUrl : urls.httpUrl);
  try {
    conn.write(clientStart());
    const block = headerBlock([
      [":method", door.method],
      [":scheme", "http"],
      [":path", door.path],
      [":authority", "localhost"],
      ...fields,
    ]);
    const flags = Flag.END_HEADERS | (door.body ? 0 : Flag.END_STREAM);
    conn.write(frame(FrameType.HEADERS, flags, 1, block));
    if (door.body) conn.write(frame(FrameType.DATA, Flag.END_STREAM, 1, door.body));
    const answer = await answerOn(conn, 1);
    return { status: answer.status, fields: answer.fields, body: answer.body.toString() };
  } finally {
    conn.socket.destroy();
  }
}
