import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import type { Sealer } from "../sealing.ts";
import type { SecretsReader } from "./run-secrets.ts";
import { failStep } from "./step-functions.ts";

/** Reads the named secrets of an account in one query; a missing or unreadable one fails the step for good. */
export function createSecretsReader(deps: { db: Kysely<Database>; sealer: Sealer }): SecretsReader {
  return async (accountId, keys) => {
    const rows = await deps.db
      .selectFrom("secrets")
      .select(["key", "value"])
      .where("account_id", "=", accountId)
      .where("key", "in", keys)
      .execute();
    const values: Record<string, string> = {};
    for (const row of rows) {
      try {
        values[row.key] = deps.sealer.open(row.value, `secret:${accountId}:${row.key}`);
      } catch {
        failStep(`secret "${row.key}" could not be opened`);
      }
    }
    const missing = keys.find((key) => values[key] === undefined);
    if (missing !== undefined) failStep(`secret "${missing}" does not exist`);
    return values;
  };
}
