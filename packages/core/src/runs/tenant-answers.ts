/**
 * What a flow may put in an answer the platform sends for it (a `respond` step's, a `stop`'s
 * `response`, or its output, on `/webhooks/...`, `/gw/...` and runs started by hand in wait
 * mode). The answer leaves from the platform's own origin, where its API, docs and web app
 * live: it is other people's content there, so it is sandboxed and carries only headers that
 * describe that content. Every other header could act on the origin, the browser or a proxy
 * in front (cookies, service workers, reporting, client hints, permissions, redirects by
 * timer, encodings the body does not have, the platform's own security headers), so the list
 * says what is allowed, not what is refused: a header the web invents tomorrow is refused too.
 *
 * Invariant: one list, read at save (`respondPayloadProblems`: a 400 naming the header) and at
 * send (`allowedAnswerHeaders`: whatever is off the list is dropped, so names that come from
 * an expression at run time, or a revision saved before a rule, never reach a caller).
 */

/** Headers a flow's answer may send, by lower-case name. */
const ALLOWED_HEADERS: ReadonlySet<string> = new Set([
  // What the body is (its length and framing are the server's).
  "content-type",
  "content-language",
  "content-disposition",
  // Caching.
  "cache-control",
  "etag",
  "last-modified",
  "expires",
  "vary",
  "age",
  // Where to go next, when to come back.
  "location",
  "retry-after",
  // It can only restrict: the platform's `sandbox` policy is added beside it, and every policy applies.
  "content-security-policy",
]);

/** Families of headers a flow's answer may send, by lower-case prefix: CORS, and the flow's own `x-` headers. */
const ALLOWED_PREFIXES = ["access-control-", "x-"] as const;

/**
 * `x-` headers that are not the flow's own, and why: the platform's and the browsers' security
 * headers (the platform's must win; a tenant may not weaken the others), and instructions to a
 * proxy in front of the platform.
 */
const REFUSED_X_HEADERS: ReadonlyMap<string, string> = new Map([
  ["x-content-type-options", "is a security header the platform sets on every answer"],
  ["x-frame-options", "is a browser security header, which a flow's answer may not weaken"],
  ["x-xss-protection", "is a browser security header, which a flow's answer may not weaken"],
  ["x-permitted-cross-domain-policies", "is a browser security header, which a flow's answer may not weaken"],
  ["x-dns-prefetch-control", "is a browser security header, which a flow's answer may not weaken"],
  ["x-download-options", "is a browser security header, which a flow's answer may not weaken"],
  ["x-ua-compatible", "is a browser security header, which a flow's answer may not weaken"],
  ["x-request-id", "is the platform's id of the request"],
  ["x-sendfile", "would instruct a proxy in front of the platform"],
  ["x-lighttpd-send-file", "would instruct a proxy in front of the platform"],
]);
/** Prefixes of `x-` header families that instruct a proxy (nginx's `X-Accel-Redirect`, ...). */
const REFUSED_X_PREFIXES = ["x-accel-"] as const;

const OFF_THE_LIST =
  "is not on the list a flow's answer may send from: Content-Type, Content-Language, Content-Disposition, " +
  "Cache-Control, ETag, Last-Modified, Expires, Vary, Age, Location, Retry-After, Content-Security-Policy, " +
  "Access-Control-* and the flow's own X-* headers";

/** Why a flow's answer may not send this header, or undefined when it may. */
export function answerHeaderRefusal(name: string): string | undefined {
  const lower = name.toLowerCase();
  if (ALLOWED_HEADERS.has(lower)) return undefined;
  const refusedX = REFUSED_X_HEADERS.get(lower);
  if (refusedX) return refusedX;
  if (REFUSED_X_PREFIXES.some((prefix) => lower.startsWith(prefix)))
    return "would instruct a proxy in front of the platform";
  if (ALLOWED_PREFIXES.some((prefix) => lower.startsWith(prefix))) return undefined;
  return OFF_THE_LIST;
}

/**
 * The problems of an answer's fields (a `respond` step's payload, a `stop`'s `response`),
 * each with its field: every statically named header off the list. Headers that are one
 * template (`"headers": "{{...}}"`) are named at run time and filtered when sent.
 */
export function respondPayloadProblems(payload: Record<string, unknown>): { field: string[]; message: string }[] {
  const headers = payload.headers;
  if (headers === null || typeof headers !== "object" || Array.isArray(headers)) return [];
  return Object.keys(headers).flatMap((name) => {
    const reason = answerHeaderRefusal(name);
    return reason ? [{ field: ["headers", name], message: `a flow's answer may not send ${name}: it ${reason}` }] : [];
  });
}

/** The headers of an answer that may be sent: those on the list; every other is dropped. */
export function allowedAnswerHeaders(headers: Record<string, string>): [string, string][] {
  return Object.entries(headers).filter(([name]) => answerHeaderRefusal(name) === undefined);
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
