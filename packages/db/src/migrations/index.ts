import type { Migration } from "kysely/migration";
import * as m20261122000100 from "./20261122000100_accounts_users_memberships.ts";
import * as m20261122000200 from "./20261122000200_broker.ts";
import * as m20261122000300 from "./20261122000300_accounts_auth.ts";
import * as m20261123030100 from "./20261123030100_secrets.ts";
import * as m20261123030200 from "./20261123030200_node_templates.ts";
import * as m20261123060000 from "./20261123060000_flows.ts";

/**
 * Every migration, by its timestamped name. A landed migration is frozen;
 * a change to the schema is a new file registered here.
 */
export const migrations: Record<string, Migration> = {
  "20261122000100_accounts_users_memberships": m20261122000100,
  "20261122000200_broker": m20261122000200,
  "20261122000300_accounts_auth": m20261122000300,
  "20261123030100_secrets": m20261123030100,
  "20261123030200_node_templates": m20261123030200,
  "20261123060000_flows": m20261123060000,
};
