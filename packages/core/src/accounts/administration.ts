import type { Principal } from "../caller.ts";
import { DomainError } from "../errors.ts";
import { type NamedOperation, namesOperation } from "./path-patterns.ts";
import { requireAdmin, requireSignedInUser } from "./permissions.ts";

/**
 * Account administration: the operations that mint or take away access to an account. A
 * credential can never mint one that reaches further than itself, so these need a
 * signed-in user (with the role each asks for), or an API key made for them: one whose
 * `allowed_paths` name the operation explicitly, with its method (see `namesOperation`).
 * An unrestricted key names nothing: it acts as its creator everywhere else, not here.
 * Inviting is not among them: it is for people only (`requireSignedInAdministrator`).
 */
export const ADMINISTRATION = {
  removeUser: { method: "DELETE", template: "/accounts/remove-user" },
  createApiKey: { method: "POST", template: "/accounts/api-keys" },
  deleteApiKey: { method: "DELETE", template: "/accounts/api-keys/{id}" },
  removeOthersPasskeys: { method: "DELETE", template: "/accounts/all-passkeys" },
} as const satisfies Record<string, NamedOperation>;

/** How an entry names an operation: its method and path, `*` for a parameter. */
const entryFor = (operation: NamedOperation) =>
  `${operation.method} ${operation.template.replace(/\{[^}]*\}.*$/, "*")}`;

/** Throws 403 unless the caller may administer the account by this operation (its role is checked apart). */
export function requireAdministration(principal: Principal, operation: NamedOperation): void {
  if (principal.apiKeyId === undefined) return;
  if (principal.allowedPaths && namesOperation(principal.allowedPaths, operation)) return;
  throw new DomainError(
    "forbidden",
    `account administration needs a signed-in user, or an API key whose allowed_paths name "${entryFor(operation)}"`,
  );
}

/**
 * Administration for people only: a signed-in owner or admin (a session), never an API key,
 * whatever its `allowed_paths` name.
 * - Inviting: an invitation's token is accepted for a session of the account (for a new
 *   email, one whose password the inviter chooses), and a key never yields a session.
 * - The account's own settings (how long its runs are kept) are decided by the people who
 *   run it, not by a credential acting as one of them.
 */
export function requireSignedInAdministrator(principal: Principal, action: string): void {
  requireSignedInUser(principal);
  requireAdmin(principal, action);
}
