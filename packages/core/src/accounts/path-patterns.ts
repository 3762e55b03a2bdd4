/**
 * Path restrictions of API keys. A pattern is a literal path (`/secrets/db`) or a prefix
 * ending in `*` (`/storage/*`, `/hub/agent*`). Paths under `/hub/agent` are special: a
 * restricted key reaches them only through a pattern that itself names `/hub/agent`,
 * never through a broader one such as `/*` or `/hub/*`.
 */

const AGENT_PREFIX = "/hub/agent";

/**
 * The path percent-decoded, repeated slashes collapsed, and without the trailing slash
 * routing ignores (`/storage/` is served as `/storage`); null when undecodable.
 */
function canonicalPath(path: string): string | null {
  try {
    const collapsed = decodeURIComponent(path).replace(/\/{2,}/g, "/");
    return collapsed.length > 1 ? collapsed.replace(/\/$/, "") : collapsed;
  } catch {
    return null;
  }
}

function matches(pattern: string, path: string): boolean {
  return pattern.endsWith("*") ? path.startsWith(pattern.slice(0, -1)) : path === pattern;
}

function namesAgentPaths(pattern: string): boolean {
  return pattern.toLowerCase().startsWith(AGENT_PREFIX);
}

export function pathAllowed(patterns: readonly string[], path: string): boolean {
  const canonical = canonicalPath(path);
  if (canonical === null) return false;
  const agentPath = canonical.toLowerCase().startsWith(AGENT_PREFIX);
  return patterns.some((pattern) => (!agentPath || namesAgentPaths(pattern)) && matches(pattern, canonical));
}
