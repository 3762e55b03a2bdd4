import type { Principal } from "../caller.ts";
import { DomainError } from "../errors.ts";
import type { Services } from "../services.ts";

/**
 * Whose metrics a request reads: with a credential, the caller's own account (`account`
 * is ignored); without one, as the spec states the request, the account named by
 * `account`, unless the operator set METRICS_REQUIRE_AUTH.
 */
export async function accountOfMetricsRequest(
  services: Pick<Services, "db" | "config">,
  principal: Principal | undefined,
  account: string | undefined,
): Promise<string> {
  if (principal) return principal.accountId;
  if (services.config.metricsRequireAuth) throw new DomainError("unauthorized", "missing credential");
  if (!account) {
    throw new DomainError("validation_error", "account is required without a credential", {
      problems: [{ path: "account", message: "is required without a credential" }],
    });
  }
  const found = await services.db.selectFrom("accounts").select("id").where("id", "=", account).executeTakeFirst();
  if (!found) throw new DomainError("not_found", "account not found");
  return found.id;
}
