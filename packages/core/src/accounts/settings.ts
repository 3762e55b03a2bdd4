import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import type { Principal } from "../caller.ts";
import { invalidInput } from "../errors.ts";
import { requireSignedInAdministrator } from "./administration.ts";

/** What an account decides for itself within the deployment's settings. */
export interface AccountSettings {
  /** Days its runs are kept: its own choice, else the deployment's. */
  run_retention_days: number;
  /** The longest it may choose: RUN_RETENTION_DAYS. */
  run_retention_days_max: number;
}

interface SettingsDeps {
  db: Kysely<Database>;
  config: { runs: { retentionDays: number } };
}

export async function readSettings(deps: SettingsDeps, accountId: string): Promise<AccountSettings> {
  const row = await deps.db
    .selectFrom("accounts")
    .select("run_retention_days")
    .where("id", "=", accountId)
    .executeTakeFirstOrThrow();
  const max = deps.config.runs.retentionDays;
  return { run_retention_days: Math.min(row.run_retention_days ?? max, max), run_retention_days_max: max };
}

/**
 * Signed-in owners and admins (never an API key: `requireSignedInAdministrator`) shorten (or
 * give back, with null) how long the account's runs are kept; the worker deletes older ones
 * within a minute. Longer than the deployment keeps is a 400.
 */
export async function updateSettings(
  deps: SettingsDeps,
  principal: Principal,
  input: { run_retention_days: number | null },
): Promise<AccountSettings> {
  requireSignedInAdministrator(principal, "change the account's settings");
  const max = deps.config.runs.retentionDays;
  if (input.run_retention_days !== null && input.run_retention_days > max) {
    throw invalidInput({
      path: "run_retention_days",
      message: `must be at most ${max} (the deployment's RUN_RETENTION_DAYS)`,
    });
  }
  await deps.db
    .updateTable("accounts")
    .set({ run_retention_days: input.run_retention_days })
    .where("id", "=", principal.accountId)
    .execute();
  return readSettings(deps, principal.accountId);
}
