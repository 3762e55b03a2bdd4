/**
 * Path restrictions of API keys. A pattern is a literal path (`/secrets/db`) or a prefix
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
