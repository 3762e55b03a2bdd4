/** Where the console goes after a sign-in when it was not sent anywhere, or not anywhere it may go. */
export const CONSOLE_HOME = "/console/flows";

/** Any origin will do: a relative `redirect` resolves against it, and one that leaves it is refused. */
const BASE = "https://console.invalid";

/**
 * Where a sign-in goes next: the `redirect` it was given when that is a page of this console
 * (`/console/...`, with its query and fragment), else CONSOLE_HOME. The path is judged as
 * the browser would resolve it, dot segments and backslashes included, so
 * `/console/../gw/x` or `/console/..\gw/x` is a tenant's gateway, not a console page, and
 * `//evil.example/console/` another site. Encoded dots, slashes and backslashes are refused
 * too: a router that decodes them would resolve the path a second time.
 */
export function signInTarget(redirect: unknown): string {
  if (typeof redirect !== "string" || !redirect.startsWith("/")) return CONSOLE_HOME;
  let url: URL;
  try {
    url = new URL(redirect, BASE);
  } catch {
    return CONSOLE_HOME;
  }
  if (url.origin !== BASE || !url.pathname.startsWith("/console/") || /%2e|%2f|%5c/i.test(url.pathname)) {
    return CONSOLE_HOME;
  }
  return `${url.pathname}${url.search}${url.hash}`;
}
