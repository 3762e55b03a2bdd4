import type { Migration } from "kysely/migration";
import * as m20261122000100 from "./20261122000100_accounts_users_memberships.ts";

/**
 * Every migration, by its timestamped name. A landed migration is frozen;
 * a change to the schema is a new file registered here.
 */
export const migrations: Record<string, Migration> = {
  "20261122000100_accounts_users_memberships": m20261122000100,
};
