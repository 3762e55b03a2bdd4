import type { AccessTokens } from "./access-tokens.ts";

/** Tokens remembered per process: enough for every client of a busy API, small in memory. */
const DEFAULT_MAX_ENTRIES = 10_000;

/** The `exp` claim (Unix seconds) of a compact JWT, or undefined when it cannot be read. */
function expiryOf(token: string): number | undefined {
  const payload = token.split(".")[1];
  if (!payload) return undefined;
  try {
    const { exp } = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { exp?: unknown };
    return typeof exp === "number" ? exp : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Access tokens whose verification is remembered: a token string that verified once is
 * accepted again without checking its signature until it expires. The string itself is
 * the proof (the same bytes verify the same way), so this changes no decision, only its
 * cost; sessions are still checked on every request by the authenticator. Failures are
 * never remembered. The oldest entry makes room when the cache is full.
 */
export function rememberVerifiedTokens(tokens: AccessTokens, options: { maxEntries?: number } = {}): AccessTokens {
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
  const verified = new Map<string, { claims: Awaited<ReturnType<AccessTokens["verify"]>>; expiresAtMs: number }>();

  return {
    issue: (claims) => tokens.issue(claims),
    async verify(token) {
      const known = verified.get(token);
      if (known && Date.now() < known.expiresAtMs) return known.claims;
      if (known) verified.delete(token);
      const claims = await tokens.verify(token);
      const exp = expiryOf(token);
      if (exp !== undefined) {
        if (verified.size >= maxEntries) verified.delete(verified.keys().next().value as string);
        verified.set(token, { claims, expiresAtMs: exp * 1000 });
      }
      return claims;
    },
  };
}
