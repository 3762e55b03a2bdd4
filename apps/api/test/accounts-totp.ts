import { expect } from "bun:test";
import { totpCodeFromUrl } from "@platform/core/testing";
import { bearer } from "./accounts-helpers.ts";
import type { TestApi } from "./harness.ts";

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
