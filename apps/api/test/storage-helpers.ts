import { bearer, signUp } from "./accounts-helpers.ts";
import type { TestApi } from "./harness.ts";

export interface Caller {
  accountId: string;
  headers: Record<string, string>;
}

/** A new account, signed in. */
export async function newCaller(api: TestApi, tag: string): Promise<Caller> {
  const { auth } = await signUp(api, tag);
  return { accountId: auth.account.id, headers: bearer(auth.auth_token) };
}

/** A JSON request as `caller`, answering the status and parsed body. */
export async function call(
  api: TestApi,
  caller: Caller | null,
  method: string,
  path: string,
  json?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: the assertions that read a body are its type check
): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await api.request(path, { method, headers: caller?.headers ?? {}, json });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null, headers: response.headers };
}

/** What every storage failure answers: exactly `{error: <code>}`. */
export const storageError = (status: number, error: string) => ({ status, body: { error } });
