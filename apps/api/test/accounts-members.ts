import { expect } from "bun:test";
import { type AuthResultBody, bearer, PASSWORD, uniqueEmail } from "./accounts-helpers.ts";
import type { TestApi } from "./harness.ts";

/** Invites an email to the account of `token` and returns the invitation's token. */
export async function invite(api: TestApi, token: string, email: string, role: "admin" | "member"): Promise<string> {
  const response = await api.request("/accounts/users", {
    method: "POST",
    headers: bearer(token),
    json: { email, role },
  });
  expect(response.status).toBe(200);
  const { data } = (await response.json()) as { data: { invitation: { token: string } } };
  return data.invitation.token;
}

export function acceptInvitation(api: TestApi, json: { token: string; password: string; display_name?: string }) {
  return api.request("/accounts/invitations/accept", { method: "POST", json });
}

/** Invites a new user to the account of `ownerToken`; they accept, which signs them in there. */
export async function addMember(
  api: TestApi,
  ownerToken: string,
  tag: string,
  role: "admin" | "member",
): Promise<{ email: string; auth: AuthResultBody }> {
  const email = uniqueEmail(tag);
  const token = await invite(api, ownerToken, email, role);
  const response = await acceptInvitation(api, { token, password: PASSWORD });
  expect(response.status).toBe(200);
  const { data } = (await response.json()) as { data: AuthResultBody };
  return { email, auth: data };
}
