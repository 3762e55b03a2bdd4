import type { Role } from "@platform/db";

// Who is calling: leaf types every area may import. This module imports nothing of the areas
// (nor `services.ts`), so importing it never closes an import circle.

/** What the HTTP edge knows about a request, independent of the HTTP framework. */
export interface RequestInfo {
  id: string;
  ip: string;
  /** The path as the client addressed it (`/hub/agent/...`), used by API-key path restrictions. */
  path: string;
  /** The request's method (a HEAD reaches the routes as GET). */
  method: string;
  headers: Headers;
  /**
   * Holds the request's connection open, silent, for `ms` more. Bun's HTTP server closes a
   * connection silent for its idle timeout (10 s) even while the handler still works on the
   * answer, so a handler about to wait for a run (wait mode, a gateway, an MCP tool call)
   * says first for how long; the edge gives the connection its idle timeout back once the
   * answer is ready.
   */
  holdOpen(ms: number): void;
}

export type Credential = { scheme: "bearer"; token: string } | { scheme: "api_key"; key: string } | null;

/** The caller, once a credential has been verified. */
export interface Principal {
  accountId: string;
  userId: string;
  role: Role;
  /** Set when the caller used an API key rather than an access token. */
  apiKeyId?: string;
  /** The key's `allowed_paths` (null: unrestricted); absent for an access token. */
  allowedPaths?: readonly string[] | null;
  /** The sign-in session of an access token (absent for an API key). */
  sessionId?: string;
}

/** Reads `Authorization: Bearer <token>` or `X-Api-Key: <key>`; the bearer token wins when both are sent. */
export function parseCredential(headers: Headers): Credential {
  const authorization = headers.get("authorization");
  const bearer = authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
  if (bearer) return { scheme: "bearer", token: bearer };
  const key = headers.get("x-api-key")?.trim();
  return key ? { scheme: "api_key", key } : null;
}
