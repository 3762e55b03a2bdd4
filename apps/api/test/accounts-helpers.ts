import { expect } from "bun:test";
import { createHmac, randomBytes } from "node:crypto";
import { totpCodeFromUrl } from "@platform/core/testing";
import type { TestApi } from "./harness.ts";

/** A signing key the test knows, so it can mint tokens the server would (expired ones, say). */
export function testSigningKey(): { kid: string; secret: string; env: string } {
  const secret = randomBytes(32).toString("base64url");
  return { kid: "test", secret, env: `test:${secret}` };
}

export const PASSWORD = "correct horse battery staple";

let sequence = 0;
export function uniqueEmail(tag: string): string {
  sequence += 1;
  return `${tag}-${Date.now().toString(36)}-${sequence}@example.com`;
}

/**
 * A response's JSON body. Tests read fields freely and let their assertions check the
 * shape, so the body is untyped here.
 */
// biome-ignore lint/suspicious/noExplicitAny: the assertions that read a body are its type check
export async function readBody(response: Response): Promise<any> {
  return response.json();
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

export interface AuthResultBody {
  refresh_token: string;
  auth_token: string;
  passkey_enabled: boolean;
  totp_enabled: boolean;
  account: { name: string; id: string; display_name: string; root_email: string; subscription_status: string };
}

export interface SignedUp {
  email: string;
  password: string;
  auth: AuthResultBody;
}

/** Creates an account through the API and returns its owner's sign-in. */
export async function signUp(api: TestApi, tag: string, extra: Record<string, unknown> = {}): Promise<SignedUp> {
  const email = uniqueEmail(tag);
  const response = await api.request("/accounts/signup", {
    method: "POST",
    json: { email, password: PASSWORD, account_name: `${tag} inc`, ...extra },
  });
  expect(response.status).toBe(200);
  const { data } = (await response.json()) as { data: AuthResultBody };
  return { email, password: PASSWORD, auth: data };
}

export function logIn(api: TestApi, email: string, password = PASSWORD): Promise<Response> {
  return api.request("/accounts/auth-with-password", { method: "POST", json: { email, password } });
}

/** Signs in and expects the full result (no second factor). */
export async function logInFully(api: TestApi, email: string, password = PASSWORD): Promise<AuthResultBody> {
  const response = await logIn(api, email, password);
  expect(response.status).toBe(200);
  const { data } = (await response.json()) as { data: AuthResultBody };
  expect(data.auth_token).toBeString();
  return data;
}

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

/** An HS256 JWT signed by hand, to present tokens the server never issued. */
export function handSignedJwt(
  secret: Uint8Array | Buffer,
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
): string {
  const encode = (part: Record<string, unknown>) => Buffer.from(JSON.stringify(part)).toString("base64url");
  const signingInput = `${encode(header)}.${encode(payload)}`;
  const signature = createHmac("sha256", secret).update(signingInput).digest("base64url");
  return `${signingInput}.${signature}`;
}

/** The claims of a JWT, read without verifying it. */
export function jwtParts(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  const [header = "", payload = ""] = token.split(".");
  return {
    header: JSON.parse(Buffer.from(header, "base64url").toString()),
    payload: JSON.parse(Buffer.from(payload, "base64url").toString()),
  };
}

/** The time step of TOTP codes. */
export const TOTP_STEP_MS = 30_000;

/** Enables TOTP for the holder of `token`; codes of later steps than `confirmedAt`'s are still unused. */
export async function enableTotp(api: TestApi, token: string): Promise<{ otpauthUrl: string; confirmedAt: number }> {
  const setup = await api.request("/accounts/totp/setup", { method: "POST", headers: bearer(token) });
  expect(setup.status).toBe(200);
  const { data } = (await setup.json()) as { data: { otpauth_url: string } };
  const confirmedAt = Date.now();
  const verify = await api.request("/accounts/totp/verify", {
    method: "POST",
    headers: bearer(token),
    json: { code: totpCodeFromUrl(data.otpauth_url, confirmedAt) },
  });
  expect(verify.status).toBe(200);
  return { otpauthUrl: data.otpauth_url, confirmedAt };
}
