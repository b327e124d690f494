// The headers a matrix peer answers with, as the bench hands them over in HEADERS
// (bench/peer_services.ts `CeilingHeaders`): `static`, the values this server sent for the same
// request, copied; `dynamic`, the names whose values the peer makes per answer (`x-request-id`, a
// fresh UUID; `etag` and `location`, from what it answers). Shared by the ceiling
// (raw_kv_address_book.ts) and the stack's floors, so they all send what this server sends.

/** What an answer's per-answer headers are made from. */
interface PerAnswer {
  etag?: string | undefined;
  location?: string | undefined;
}

/** The headers of one answer: the copied ones, and the named per-answer ones it has values for. */
export function answerHeaders(): (values?: PerAnswer) => Record<string, string> {
  const headers = JSON.parse(Deno.env.get("HEADERS") ?? '{"static":{},"dynamic":[]}') as {
    static: Record<string, string>;
    dynamic: string[];
  };
  const withEtag = headers.dynamic.includes("etag");
  const withLocation = headers.dynamic.includes("location");
  const withRequestId = headers.dynamic.includes("x-request-id");
  return (values = {}) => {
    const h: Record<string, string> = { ...headers.static };
    if (withRequestId) h["x-request-id"] = crypto.randomUUID();
    if (withEtag && values.etag !== undefined) h.etag = values.etag;
    if (withLocation && values.location !== undefined) h.location = values.location;
    return h;
  };
}
