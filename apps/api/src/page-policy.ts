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

/** The policy of a page's file (a script, a stylesheet, an image) opened on its own: it is no page, and runs and loads nothing. */
export const FILE_CSP = "default-src 'none'; frame-ancestors 'none'";
