import {
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { isGrpcMediaType, mediaTypeOf } from "./http/media_type.ts";

/**
 * True when Deno exports traces (`OTEL_DENO=true`, Deno's built-in OpenTelemetry). Read once at
 * start: Deno decides at start-up too, and with tracing off every hook below is one branch on a
 * constant. Without permission to read the variable, tracing counts as off.
 */
export const TRACING: boolean = readTracing();

function readTracing(): boolean {
  try {
    const state = Deno.permissions.querySync({ name: "env", variable: "OTEL_DENO" }).state;
    return state === "granted" && Deno.env.get("OTEL_DENO") === "true";
  } catch {
    return false;
  }
}

const tracer = trace.getTracer("books-api");

/** `/addresses/:id` (Hono) → `/addresses/{id}` (OpenAPI, and what span names carry). */
export function routeTemplate(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?/g, "{$1}");
}

/**
 * Names the span Deno.serve opened for this request: `GET /addresses/{id}`, with `http.route`
 * and the request id (a request no route took keeps Deno's name, the method). Returns the trace
 * id for the access log, or undefined when no span is active. Call only when TRACING is true.
 */
export function nameHttpSpan(
  method: string,
  route: string | undefined,
  requestId: string,
): string | undefined {
  const span = trace.getActiveSpan();
  if (span === undefined) return undefined;
  if (route !== undefined) {
    span.updateName(`${method} ${route}`);
    span.setAttribute("http.route", route);
  }
  span.setAttribute("request.id", requestId);
  return span.spanContext().traceId;
}

/** What a finished RPC reports to its span. */
interface RpcSpanEnd {
  /** gRPC status code (0 is OK). */
  code: number;
}

/**
 * Traces one RPC: `books.v1.BooksService/books` with `rpc.system`, `rpc.service`, `rpc.method`
 * and the request id. On the main port they go on the span Deno.serve opened; on the gRPC
 * listener (node:http2, whose span Deno does not make active) a server span is started here.
 * Returns the trace id and the function that ends the call. Call only when TRACING is true.
 */
export function startRpcSpan(
  system: "grpc" | "connect_rpc",
  service: string,
  method: string,
  requestId: string,
  /** When the call began (`performance.now()`), if before now. */
  started?: number,
  /** The caller's W3C trace context (`traceparent`, `tracestate`), continued by an own span. */
  incoming?: { traceparent?: string | null | undefined; tracestate?: string | null | undefined },
): { traceId: string; end(result: RpcSpanEnd): void } {
  const name = `${service}/${method}`;
  const attributes = {
    "rpc.system": system,
    "rpc.service": service,
    "rpc.method": method,
    "request.id": requestId,
  };
  const active = trace.getActiveSpan();
  let own: Span | undefined;
  const span = active ?? (own = tracer.startSpan(
    name,
    {
      kind: SpanKind.SERVER,
      attributes,
      ...(started === undefined ? {} : { startTime: performance.timeOrigin + started }),
    },
    incoming?.traceparent ? propagation.extract(context.active(), incoming) : undefined,
  ));
  // The main port's span is named by the edge with its route, `POST /{service}/{method}`.
  if (active !== undefined) active.setAttributes(attributes);
  return {
    traceId: span.spanContext().traceId,
    end({ code }) {
      span.setAttribute("rpc.grpc.status_code", code);
      if (own === undefined) return;
      if (code !== 0) own.setStatus({ code: SpanStatusCode.ERROR });
      own.end();
    },
  };
}

/** The RPC system of a call by its content type: gRPC and gRPC-Web are `grpc`, else Connect. */
export function rpcSystemOf(contentType: string | null): "grpc" | "connect_rpc" {
  return isGrpcMediaType(mediaTypeOf(contentType)) ? "grpc" : "connect_rpc";
}
