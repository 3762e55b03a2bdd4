import { expect } from "bun:test";
import type { TestApi } from "./harness.ts";

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
