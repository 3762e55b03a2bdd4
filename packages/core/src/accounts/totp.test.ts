import { describe, expect, test } from "bun:test";
import { Secret, TOTP } from "otpauth";
import { stepOfCode } from "./totp.ts";

describe("TOTP codes", () => {
  const secret = new Secret({ size: 20 }).base32;
  const at = Date.UTC(2026, 10, 22, 12, 0, 15);
  const codeAt = (timestamp: number) => TOTP.generate({ secret: Secret.fromBase32(secret), timestamp });

  test("a code names the 30-second step it was made in", () => {
    expect(stepOfCode(secret, codeAt(at), at)).toBe(Math.floor(at / 30_000));
  });

  test("codes of the neighbouring steps are accepted, older ones are not", () => {
    expect(stepOfCode(secret, codeAt(at - 30_000), at)).toBe(Math.floor(at / 30_000) - 1);
    expect(stepOfCode(secret, codeAt(at + 30_000), at)).toBe(Math.floor(at / 30_000) + 1);
    expect(stepOfCode(secret, codeAt(at - 90_000), at)).toBeNull();
  });

  test("a code from another secret matches nothing", () => {
    const other = new Secret({ size: 20 });
    expect(stepOfCode(secret, TOTP.generate({ secret: other, timestamp: at }), at)).toBeNull();
  });
});
