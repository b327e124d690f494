import { addMissingHeaders } from "../lib/http/response_headers.ts";

/**
 * The policy of every HTML page (GraphiQL, /docs): only this server's own scripts, styles and
 * connections (inline style attributes and data: fonts and images excepted), so a page cannot
 * silently depend on a CDN. Set here once, for every page, rather than by each page.
 */
const PAGE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "font-src 'self' data:",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const PAGE_HEADERS = {
  "content-security-policy": PAGE_CSP,
  "referrer-policy": "no-referrer",
};

/**
 * Headers for HTML pages (GraphiQL, /docs), added by the entry (server/entry.ts) to every answer
 * that is one: a Content-Security-Policy allowing only this server's assets unless the page set a
 * stricter one itself, and `Referrer-Policy`, so tokens or ids in a URL do not leak to other
 * sites. `nosniff` is on every response (the entry too).
 */
export function addPageHeaders(headers: Headers): void {
  const type = headers.get("content-type");
  if (type === null || !type.startsWith("text/html")) return;
  addMissingHeaders(headers, PAGE_HEADERS);
}
