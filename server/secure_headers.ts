import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../lib/http/hono_env.ts";
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

/**
 * Headers for HTML pages (GraphiQL, /docs): a Content-Security-Policy allowing only this
 * server's assets unless the page set a stricter one itself, and `Referrer-Policy`, so tokens
 * or ids in a URL do not leak to other sites. `nosniff` is on every response (requestContext).
 */
export function pageHeaders(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    const type = c.res.headers.get("content-type");
    if (type === null || !type.startsWith("text/html")) return;
    addMissingHeaders(c.res.headers, {
      "content-security-policy": PAGE_CSP,
      "referrer-policy": "no-referrer",
    });
  };
}
