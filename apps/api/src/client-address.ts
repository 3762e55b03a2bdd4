import { isIP } from "node:net";

/**
 * The address a request came from. With no trusted proxy (`hops` 0) it is the socket's
 * peer, whatever X-Forwarded-For says. Behind `hops` reverse proxies that each append
 * the address they received from to X-Forwarded-For, it is the entry `hops` places from
 * the right of that header followed by the peer: the entries further left were written
 * by the client and prove nothing. A malformed or missing entry counts as the peer.
 */
export function clientAddress(peer: string, forwardedFor: string | null, hops: number): string {
  if (hops === 0 || !forwardedFor) return peer;
  const chain = forwardedFor.split(",").map((entry) => entry.trim());
  const entry = chain[Math.max(0, chain.length - hops)] ?? "";
  return isIP(entry) ? entry : peer;
}
