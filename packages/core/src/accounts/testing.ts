import { TOTP, URI } from "otpauth";

/**
 * For tests outside core, which cannot import otpauth themselves: the code an
 * authenticator app shows at `timestamp` for an `otpauth://` URL, read as the app would.
 */
export function totpCodeFromUrl(otpauthUrl: string, timestamp = Date.now()): string {
  const otp = URI.parse(otpauthUrl);
  if (!(otp instanceof TOTP)) throw new Error(`not a TOTP URL: ${otpauthUrl}`);
  return otp.generate({ timestamp });
}
