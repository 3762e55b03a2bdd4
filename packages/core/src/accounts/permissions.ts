import type { Principal } from "../caller.ts";
import { DomainError } from "../errors.ts";

/** Owners and admins manage the account's users and everyone's keys; members manage their own things. */
export function isAdmin(principal: Principal): boolean {
  return principal.role === "owner" || principal.role === "admin";
}

export function requireAdmin(principal: Principal, action: string): void {
  if (!isAdmin(principal)) throw new DomainError("forbidden", `only owners and admins can ${action}`);
}

/** Enrolling a second factor is for the person at the keyboard, not for an API key acting as them. */
export function requireSignedInUser(principal: Principal): void {
  if (principal.apiKeyId) {
    throw new DomainError("forbidden", "this operation needs a signed-in user (Bearer token), not an API key");
  }
}
