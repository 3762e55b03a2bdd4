/**
 * What a flow may put in an answer the platform sends for it (a `respond` step's, or its
 * output, on `/webhooks/...`, `/gw/...` and runs started by hand in wait mode). The answer
 * leaves from the platform's own origin, where its API, docs and web app live: it is other
 * people's content there, so it is sandboxed and may not set state for the origin.
 */

/** Headers a flow may not send, and why: each would act on the platform's origin, not the flow's answer. */
const REFUSED_HEADERS = new Map([
  ["set-cookie", "would set a cookie for the platform's origin"],
  ["set-cookie2", "would set a cookie for the platform's origin"],
  ["service-worker-allowed", "would let a service worker control the platform's origin"],
  ["clear-site-data", "would clear the platform's storage in visitors' browsers"],
  ["strict-transport-security", "would pin HTTPS for the platform's whole host"],
  ["alt-svc", "would redirect the platform's whole host to another service"],
]);

/** Why a flow may not send this response header, or undefined when it may. */
export function refusedHeaderReason(name: string): string | undefined {
  return REFUSED_HEADERS.get(name.toLowerCase());
}

/** The problems of a `respond` step's payload, each with its field: refused headers, named. */
export function respondPayloadProblems(payload: Record<string, unknown>): { field: string[]; message: string }[] {
  const headers = payload.headers;
  if (headers === null || typeof headers !== "object" || Array.isArray(headers)) return [];
  return Object.keys(headers).flatMap((name) => {
    const reason = refusedHeaderReason(name);
    return reason ? [{ field: ["headers", name], message: `a flow's answer may not send ${name}: it ${reason}` }] : [];
  });
}

/**
 * Marks an answer as a tenant's: `Content-Security-Policy: sandbox` (the browser gives it an
 * opaque origin, so a script in it reaches none of the platform's storage, cookies or
 * service workers; added to any policy the flow set, since every policy applies) and
 * `X-Content-Type-Options: nosniff` (a browser renders it as the type it declares, never
 * guessing HTML from a body sent as text).
 */
export function sandboxTenantAnswer(headers: Headers): void {
  headers.append("content-security-policy", "sandbox");
  headers.set("x-content-type-options", "nosniff");
}
