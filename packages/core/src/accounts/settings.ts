import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import type { Principal } from "../caller.ts";
import { invalidInput } from "../errors.ts";
import type { DefinitionCache } from "../storage/definition-cache.ts";
import { requireSignedInAdministrator } from "./administration.ts";

/** What an account decides for itself within the deployment's settings. */
export interface AccountSettings {
  /** Days its runs are kept: its own choice, else the deployment's. */
  run_retention_days: number;
  /** The longest it may choose: RUN_RETENTION_DAYS. */
  run_retention_days_max: number;
  /** Whether its runs' spans carry their trigger data and step outputs (off unless it turns it on). */
  trace_run_data: boolean;
}

interface SettingsDeps {
  db: Kysely<Database>;
  config: { runs: { retentionDays: number } };
  storageDefinitions: DefinitionCache;
}

export async function readSettings(deps: SettingsDeps, accountId: string): Promise<AccountSettings> {
  const row = await deps.db
    .selectFrom("accounts")
    .select(["run_retention_days", "trace_run_data"])
    .where("id", "=", accountId)
    .executeTakeFirstOrThrow();
  const max = deps.config.runs.retentionDays;
  return {
    run_retention_days: Math.min(row.run_retention_days ?? max, max),
    run_retention_days_max: max,
    trace_run_data: row.trace_run_data,
  };
}

/**
 * Signed-in owners and admins (never an API key: `requireSignedInAdministrator`) change the
 * settings they name; one left out stays as it is. `run_retention_days` shortens (or gives
 * back, with null) how long the account's runs are kept; the worker deletes older ones within
 * a minute. Longer than the deployment keeps is a 400. `trace_run_data` is heard by every
 * process at once (the definition cache's announcement, see `tracesRunData`).
 */
export async function updateSettings(
  deps: SettingsDeps,
  principal: Principal,
  input: { run_retention_days?: number | null; trace_run_data?: boolean },
): Promise<AccountSettings> {
  requireSignedInAdministrator(principal, "change the account's settings");
  const max = deps.config.runs.retentionDays;
  if (input.run_retention_days != null && input.run_retention_days > max) {
    throw invalidInput({
      path: "run_retention_days",
      message: `must be at most ${max} (the deployment's RUN_RETENTION_DAYS)`,
    });
  }
  const changes = {
    ...(input.run_retention_days !== undefined && { run_retention_days: input.run_retention_days }),
    ...(input.trace_run_data !== undefined && { trace_run_data: input.trace_run_data }),
  };
  if (Object.keys(changes).length > 0) {
    await deps.db.updateTable("accounts").set(changes).where("id", "=", principal.accountId).execute();
  }
  if (input.trace_run_data !== undefined) {
    await deps.storageDefinitions.changed("account", principal.accountId, TRACING_SETTINGS);
  }
  return readSettings(deps, principal.accountId);
}

/** The name an account's tracing settings are kept under in the definition cache. */
const TRACING_SETTINGS = "tracing";

/**
 * Whether the account's runs show their data in their spans (`trace_run_data`), as the worker
 * asks it of each run whose span records: from the process's definition cache, so a run costs
 * no read (one per account every few seconds at most), and a change is heard at once.
 */
export async function tracesRunData(
  deps: { db: Kysely<Database>; storageDefinitions: DefinitionCache },
  accountId: string,
): Promise<boolean> {
  const settings = await deps.storageDefinitions.get("account", accountId, TRACING_SETTINGS, () =>
    deps.db
      .selectFrom("accounts")
      .select("trace_run_data")
      .where("id", "=", accountId)
      .executeTakeFirst()
      .then((row) => (row ? { traceRunData: row.trace_run_data } : undefined)),
  );
  return settings?.traceRunData ?? false;
}
