import type { Database, Role } from "@platform/db";
import type { Kysely } from "kysely";
import type { Principal } from "../caller.ts";
import { DomainError } from "../errors.ts";
import { unixSeconds } from "../time.ts";
import { ADMINISTRATION, requireAdministration } from "./administration.ts";
import type { VerifiedApiKey } from "./auth-cache.ts";
import type { AccountsDeps } from "./deps.ts";
import { hashOpaqueToken, newOpaqueToken } from "./opaque-tokens.ts";
import { uncoveredEntry } from "./path-patterns.ts";
import { isAdmin } from "./permissions.ts";

/**
 * API keys of an account. A key acts as the user who created it, with that user's
 * current role; it stops working when that user leaves the account. `allowed_paths`
 * restricts it to matching paths (see path-patterns.ts).
 */

const API_KEY_PREFIX = "wfk_";
/** Whether a credential's text is an API key (sent as `Authorization: Bearer`, where the MCP endpoint reads it). */
export const isApiKeyText = (text: string) => text.startsWith(API_KEY_PREFIX);
/** How much of a key listings show: the prefix and 8 characters of the secret. */
const SHOWN_LENGTH = API_KEY_PREFIX.length + 8;

export interface CreateApiKeyInput {
  name: string;
  allowed_paths?: string[];
}

export async function createApiKey(
  deps: AccountsDeps,
  principal: Principal,
  input: CreateApiKeyInput,
): Promise<{ id: string; name: string; key: string; allowed_paths: string[] | null }> {
  requireAdministration(principal, ADMINISTRATION.createApiKey);
  const allowedPaths = input.allowed_paths ? [...new Set(input.allowed_paths)] : null;
  if (principal.apiKeyId !== undefined) {
    // A key made by a key reaches no further than it: restricted, within the maker's entries.
    if (!allowedPaths)
      throw new DomainError("forbidden", "an API key can only create keys restricted to its own paths");
    const wider = uncoveredEntry(allowedPaths, principal.allowedPaths ?? []);
    if (wider !== undefined) {
      throw new DomainError("forbidden", `"${wider}" reaches further than this API key's own allowed_paths`);
    }
  }
  const key = newOpaqueToken(API_KEY_PREFIX);
  const id = Bun.randomUUIDv7();
  await deps.db
    .insertInto("api_keys")
    .values({
      id,
      account_id: principal.accountId,
      created_by: principal.userId,
      name: input.name,
      prefix: key.slice(0, SHOWN_LENGTH),
      key_hash: hashOpaqueToken(key),
      allowed_paths: allowedPaths && JSON.stringify(allowedPaths),
    })
    .execute();
  return { id, name: input.name, key, allowed_paths: allowedPaths };
}

/** Owners and admins see every key of the account; members see the keys they created. */
export async function listApiKeys(
  deps: AccountsDeps,
  principal: Principal,
): Promise<{ id: string; name: string; prefix: string; allowed_paths: string[] | null; created: number }[]> {
  let query = deps.db
    .selectFrom("api_keys")
    .select(["id", "name", "prefix", "allowed_paths", "created_at"])
    .where("account_id", "=", principal.accountId);
  if (!isAdmin(principal)) query = query.where("created_by", "=", principal.userId);
  const rows = await query.orderBy("created_at").orderBy("id").execute();
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    allowed_paths: row.allowed_paths,
    created: unixSeconds(row.created_at),
  }));
}

/** Deletes a key the caller can see (see `listApiKeys`); 404 otherwise. */
export async function deleteApiKey(deps: AccountsDeps, principal: Principal, id: string): Promise<void> {
  requireAdministration(principal, ADMINISTRATION.deleteApiKey);
  let query = deps.db.deleteFrom("api_keys").where("account_id", "=", principal.accountId).where("id", "=", id);
  if (!isAdmin(principal)) query = query.where("created_by", "=", principal.userId);
  const deleted = await query.returning("id").executeTakeFirst();
  if (!deleted) throw new DomainError("not_found", "no API key with this id");
  await deps.authCache.revoke({ kind: "api_key", apiKeyId: id });
}

/** The caller an API key stands for (by its hash), or undefined when it is unknown or its creator left the account. */
export async function resolveApiKey(db: Kysely<Database>, keyHash: string): Promise<VerifiedApiKey | undefined> {
  const row = await db
    .selectFrom("api_keys")
    .innerJoin("memberships", (join) =>
      join
        .onRef("memberships.account_id", "=", "api_keys.account_id")
        .onRef("memberships.user_id", "=", "api_keys.created_by"),
    )
    .select(["api_keys.id", "api_keys.account_id", "api_keys.created_by", "api_keys.allowed_paths", "memberships.role"])
    .where("api_keys.key_hash", "=", keyHash)
    .executeTakeFirst();
  if (!row) return undefined;
  const role: Role = row.role;
  return {
    principal: { accountId: row.account_id, userId: row.created_by, role, apiKeyId: row.id },
    allowedPaths: row.allowed_paths,
  };
}
