/**
 * Restrictions of API keys (`allowed_paths`). An entry is a path pattern, for every method,
 * or methods and a pattern: `GET /accounts/users`, `GET,PUT /storage/kv/orders/*` (as
 * Stripe's restricted keys read or write per resource). HEAD is read as GET, as the
 * server answers it. A pattern is a literal path (`/secrets/db`) or a prefix
 * ending in `*` (`/storage/*`, `/hub/agent*`). Paths under `/hub/agent` are special: a
 * restricted key reaches them only through a pattern that itself names `/hub/agent`,
 * never through a broader one such as `/*` or `/hub/*`.
 *
 * Paths are compared as routing reads them: segment by segment, each percent-decoded, so
 * an encoded slash stays inside its segment (`/gateway/a%2Fb` is the gateway `a/b`).
 * A tRPC call is checked against its procedure's path template (`/secrets/{key}`; a path
 * a client sends has its braces encoded): a parameter stands for every value, so only a
 * prefix pattern that ends before the first parameter allows the call.
 */

const AGENT_PREFIX = "/hub/agent";

/** The decoded segments, without the empty ones of `//` and of the trailing slash routing ignores. */
function segments(path: string): string[] | null {
  try {
    return path
      .split("/")
      .filter((segment) => segment !== "")
      .map((segment) => decodeURIComponent(segment));
  } catch {
    return null;
  }
}

/** The path with each segment decoded, `%` and `/` inside a segment written `%25` and `%2F`; null when undecodable. */
function canonicalPath(path: string): string | null {
  const decoded = segments(path);
  return decoded && `/${decoded.map((segment) => segment.replaceAll("%", "%25").replaceAll("/", "%2F")).join("/")}`;
}

/** A prefix keeps its trailing slash: `/storage/*` allows neither `/storage` nor `/storagefoo`. */
function canonicalPrefix(prefix: string): string | null {
  const canonical = canonicalPath(prefix);
  return canonical !== null && prefix.endsWith("/") && !canonical.endsWith("/") ? `${canonical}/` : canonical;
}

/** Under `/hub/agent` in any spelling: any case, encoded slashes read as slashes. */
function isAgentPath(path: string): boolean {
  const decoded = segments(path);
  return (
    decoded === null ||
    `/${decoded.join("/")}`
      .replace(/\/{2,}/g, "/")
      .toLowerCase()
      .startsWith(AGENT_PREFIX)
  );
}

function matches(pattern: string, canonical: string): boolean {
  if (!pattern.endsWith("*")) return canonicalPath(pattern) === canonical;
  const prefix = canonicalPrefix(pattern.slice(0, -1));
  return prefix !== null && canonical.startsWith(prefix);
}

function namesAgentPaths(pattern: string): boolean {
  return pattern.toLowerCase().startsWith(AGENT_PREFIX);
}

/** A template's part before its first parameter, which every prefix pattern allowing it must cover. */
function templateAllowed(pattern: string, template: string): boolean {
  if (!pattern.endsWith("*")) return false;
  const prefix = canonicalPrefix(pattern.slice(0, -1));
  const fixed = canonicalPrefix(template.slice(0, template.indexOf("{")));
  return prefix !== null && fixed?.startsWith(prefix) === true;
}

export function pathAllowed(patterns: readonly string[], path: string): boolean {
  const canonical = canonicalPath(path);
  if (canonical === null) return false;
  const agentPath = isAgentPath(path);
  const allows = path.includes("{") ? templateAllowed : (pattern: string) => matches(pattern, canonical);
  return patterns.some((pattern) => (!agentPath || namesAgentPaths(pattern)) && allows(pattern, path));
}

/** The methods an entry may name. */
export const ENTRY_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

/** An entry of `allowed_paths`, read: the methods it allows (null: every method) and its path pattern. */
export interface AllowedPath {
  methods: ReadonlySet<string> | null;
  pattern: string;
}

/** What a credential is used for: the request's method (HEAD read as GET) and path (over tRPC, the procedure's). */
export interface AccessTarget {
  method: string;
  path: string;
}

const ENTRY = /^(?:([A-Z]+(?:,[A-Z]+)*) )?(\/[^*\s]*\*?)$/;

/** Reads an entry; a string saying what is wrong with it otherwise. */
export function parseAllowedPath(entry: string): AllowedPath | string {
  const match = ENTRY.exec(entry);
  if (!match) return "must be a path starting with / (ending with * for a prefix), after methods if any: GET,PUT /path";
  const [, methods, pattern = ""] = match;
  if (methods === undefined) return { methods: null, pattern };
  const named = methods.split(",");
  const unknown = named.find((method) => !(ENTRY_METHODS as readonly string[]).includes(method));
  if (unknown !== undefined) return `names ${unknown}, not one of ${ENTRY_METHODS.join(", ")}`;
  return { methods: new Set(named), pattern };
}

/** The entries of a key, read (an entry that does not read allows nothing). */
function entriesOf(entries: readonly string[]): AllowedPath[] {
  return entries.flatMap((entry) => {
    const read = parseAllowedPath(entry);
    return typeof read === "string" ? [] : [read];
  });
}

const methodOf = (method: string) => (method === "HEAD" ? "GET" : method);

/** Whether a key restricted to `entries` may make this request. */
export function requestAllowed(entries: readonly string[], target: AccessTarget): boolean {
  const method = methodOf(target.method);
  return entriesOf(entries).some(
    (entry) => (entry.methods === null || entry.methods.has(method)) && pathAllowed([entry.pattern], target.path),
  );
}

/** An operation as its OpenAPI entry names it: `DELETE /accounts/api-keys/{id}`. */
export interface NamedOperation {
  method: string;
  template: string;
}

/**
 * Whether an entry names this operation explicitly: its methods are written out and include
 * the operation's, and its path is the operation's, a `*` standing only where the operation
 * takes a parameter (`DELETE /accounts/api-keys/*`). A bare path or a wider prefix
 * (`/accounts/*`) allows the operation's requests but does not name it.
 */
export function namesOperation(entries: readonly string[], operation: NamedOperation): boolean {
  const parameterAt = operation.template.indexOf("{");
  const fixed = canonicalPrefix(parameterAt === -1 ? operation.template : operation.template.slice(0, parameterAt));
  return entriesOf(entries).some((entry) => {
    if (entry.methods === null || !entry.methods.has(operation.method)) return false;
    if (!entry.pattern.endsWith("*")) {
      return parameterAt === -1 && canonicalPath(entry.pattern) === canonicalPath(operation.template);
    }
    return prefixWithin(entry.pattern, fixed);
  });
}

/** Whether the prefix pattern `pattern` (`/a/b/*`) allows only paths under `prefix` (canonical). */
function prefixWithin(pattern: string, prefix: string | null): boolean {
  return prefix !== null && canonicalPrefix(pattern.slice(0, -1))?.startsWith(prefix) === true;
}

/**
 * The first entry of `wanted` that no entry of `held` covers (methods within, path within:
 * a literal the held pattern allows, or a prefix inside the held prefix; `/hub/agent` only
 * from an entry that names it), or undefined when every one is covered: a key made by a
 * restricted key reaches no further than it.
 */
export function uncoveredEntry(wanted: readonly string[], held: readonly string[]): string | undefined {
  const holding = entriesOf(held);
  return wanted.find((text) => {
    const entry = parseAllowedPath(text);
    if (typeof entry === "string") return true;
    return !holding.some((own) => {
      const methods =
        own.methods === null || (entry.methods !== null && [...entry.methods].every((m) => own.methods?.has(m)));
      if (!methods) return false;
      if (namesAgentPaths(entry.pattern) && !namesAgentPaths(own.pattern)) return false;
      if (!own.pattern.endsWith("*")) return canonicalPath(own.pattern) === canonicalPath(entry.pattern);
      if (!entry.pattern.endsWith("*")) return pathAllowed([own.pattern], entry.pattern);
      return prefixWithin(entry.pattern, canonicalPrefix(own.pattern.slice(0, -1)));
    });
  });
}
