/** What the policies of the platform's own pages (the console, the API reference) share. */

/**
 * A host name, IPv4 or bracketed IPv6 address, and an optional port: what a Host header
 * holds. Nothing else may reach a policy built from it (no `;`, space or quote that would
 * start another directive or source).
 */
const HOST = /^(?:[\w-]+(?:\.[\w-]+)*|\[[\da-f:.]+\])(?::\d{1,5})?$/i;

/**
 * The origin a browser loaded a page of the platform from, for source expressions that
 * must name it with a path (`<origin>/console/assets/`: CSP's `'self'` takes none): the
 * request's scheme and its Host header (a reverse proxy passes the Host on, as
 * deploy/Caddyfile does; the server may have re-hosted the request's URL, see app.ts's
 * `routable`). `http:` also matches the page's `https:` when TLS ends at a proxy, and a
 * source without a port matches the scheme's default one. Undefined for a Host that is no
 * host: such a page then names no origin, and loads nothing.
 */
export function pageOrigin(request: Request): string | undefined {
  const url = new URL(request.url);
  const host = request.headers.get("host") ?? url.host;
  return HOST.test(host) ? `${url.protocol}//${host.toLowerCase()}` : undefined;
}

/**
 * The document policy of a page of the platform loaded from `origin` (`pageOrigin`):
 * scripts and stylesheets from its own files under `filesPath` only, never the rest of the
 * origin, where tenants' answers (`/gw`, `/webhooks`) are: `script-src 'self'` would have
 * run one as the page's script had an injection ever put it in a page, and a source with a
 * path (which must name the origin) admits that path alone. Browsers resolve dot segments
 * before they match, and a route serving such files must never redirect (after a redirect
 * a browser matches the origin only). Images from the origin and `data:`, requests to the
 * origin, no inline script or style, no `<base>`, never framed; `more` holds the page's own
 * further directives. Without an origin the page loads no file.
 */
export function pagePolicy(origin: string | undefined, filesPath: string, more: string[]): string {
  const files = origin ? `${origin}${filesPath}` : "'none'";
  return [
    "default-src 'none'",
    `script-src ${files}`,
    `style-src ${files}`,
    "img-src 'self' data:",
    "connect-src 'self'",
    ...more,
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** The policy of a page's file (a script, a stylesheet, an image) opened on its own: it is no page, and runs and loads nothing. */
export const FILE_CSP = "default-src 'none'; frame-ancestors 'none'";

/** Headers of every page of the platform and of its files, besides their policy. */
export const PAGE_HEADERS = {
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};
