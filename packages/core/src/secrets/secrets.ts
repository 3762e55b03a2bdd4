import type { Database } from "@platform/db";
import { type Kysely, sql } from "kysely";
import { DomainError } from "../errors.ts";
import { openSealed, type Sealer } from "../sealing.ts";
import { unixSeconds } from "../time.ts";

/**
 * The secrets bucket of an account. Values are sealed (AES-256-GCM) bound to their
 * account and key, so a value copied to another row or account does not open; the
 * plaintext is never stored, logged or listed.
 */
export interface SecretsDeps {
  db: Kysely<Database>;
  sealer: Sealer;
}

export const secretSealingContext = (accountId: string, key: string) => `secret:${accountId}:${key}`;

const notFound = () => new DomainError("not_found", "resource not found");

/** Creates the secret or replaces its value. */
export async function putSecret(deps: SecretsDeps, accountId: string, key: string, value: string): Promise<void> {
  const sealed = deps.sealer.seal(value, secretSealingContext(accountId, key));
  await deps.db
    .insertInto("secrets")
    .values({ account_id: accountId, key, value: sealed })
    .onConflict((conflict) =>
      conflict.columns(["account_id", "key"]).doUpdateSet({ value: sealed, updated_at: sql`now()` }),
    )
    .execute();
}

/** The plaintext; 404 when the account has no such key, 500 when the stored value does not open (its key is not listed). */
export async function readSecret(deps: SecretsDeps, accountId: string, key: string): Promise<string> {
  const row = await deps.db
    .selectFrom("secrets")
    .select("value")
    .where("account_id", "=", accountId)
    .where("key", "=", key)
    .executeTakeFirst();
  if (!row) throw notFound();
  // Logged with the request id; the caller sees the spec's "error retrieving secret".
  return openSealed(deps.sealer, row.value, secretSealingContext(accountId, key), `secret ${key}`);
}

export async function deleteSecret(deps: SecretsDeps, accountId: string, key: string): Promise<void> {
  const deleted = await deps.db
    .deleteFrom("secrets")
    .where("account_id", "=", accountId)
    .where("key", "=", key)
    .returning("key")
    .executeTakeFirst();
  if (!deleted) throw notFound();
}

/** Keys and when each was last written, by key; never values. */
export async function listSecrets(
  deps: Pick<SecretsDeps, "db">,
  accountId: string,
): Promise<{ key: string; modified: number }[]> {
  const rows = await deps.db
    .selectFrom("secrets")
    .select(["key", "updated_at"])
    .where("account_id", "=", accountId)
    .orderBy("key")
    .execute();
  return rows.map((row) => ({ key: row.key, modified: unixSeconds(row.updated_at) }));
}
