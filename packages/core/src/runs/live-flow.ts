import type { Database } from "@platform/db";
import type { Kysely } from "kysely";
import { DomainError } from "../errors.ts";

/** Throws 404 `flow not found` unless the account has the flow and it is not deleted. */
export async function requireLiveFlow(db: Kysely<Database>, accountId: string, flowId: string): Promise<void> {
  const flow = await db
    .selectFrom("flows")
    .select("id")
    .where("id", "=", flowId)
    .where("account_id", "=", accountId)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  if (!flow) throw new DomainError("not_found", "flow not found");
}
