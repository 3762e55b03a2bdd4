import { describe, expect, test } from "bun:test";
import { decodeProtectedHeader, SignJWT, UnsecuredJWT } from "jose";
import { createAccessTokens } from "./access-tokens.ts";
import { generateSigningKeyText, parseSigningKeys } from "./signing-keys.ts";

const claims = { userId: "user-1", accountId: "account-1", sessionId: "session-1" };

describe("access tokens", () => {
  test("an issued token verifies back to its claims and names its key", async () => {
    const keys = parseSigningKeys(generateSigningKeyText());
    const tokens = createAccessTokens(keys, 900);
    const token = await tokens.issue(claims);
    expect(decodeProtectedHeader(token)).toEqual({ alg: "HS256", kid: keys.current.kid, typ: "JWT" });
    expect(await tokens.verify(token)).toEqual(claims);
  });

  test("a token signed with a retired key still verifies while the key is listed", async () => {
    const retired = generateSigningKeyText();
    const before = createAccessTokens(parseSigningKeys(retired), 900);
    const token = await before.issue(claims);
    const after = createAccessTokens(parseSigningKeys(`${generateSigningKeyText()},${retired}`), 900);
    expect(await after.verify(token)).toEqual(claims);
    const dropped = createAccessTokens(parseSigningKeys(generateSigningKeyText()), 900);
    await expect(dropped.verify(token)).rejects.toThrow("invalid credential");
  });

  test("forged, unsigned, expired and malformed tokens are refused", async () => {
    const keys = parseSigningKeys(generateSigningKeyText());
    const tokens = createAccessTokens(keys, 900);
    const otherSecret = parseSigningKeys(generateSigningKeyText()).current.secret;
    const forged = await new SignJWT({ acc: "account-1", sid: "session-1" })
      .setProtectedHeader({ alg: "HS256", kid: keys.current.kid })
      .setSubject("user-1")
      .setIssuer("workflow-platform")
      .setAudience("workflow-platform-api")
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(otherSecret);
    await expect(tokens.verify(forged)).rejects.toThrow("invalid credential");

    const unsigned = new UnsecuredJWT({ acc: "account-1", sid: "session-1" }).setSubject("user-1").encode();
    await expect(tokens.verify(unsigned)).rejects.toThrow("invalid credential");

    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ acc: "account-1", sid: "session-1" })
      .setProtectedHeader({ alg: "HS256", kid: keys.current.kid })
      .setSubject("user-1")
      .setIssuer("workflow-platform")
      .setAudience("workflow-platform-api")
      .setIssuedAt(now - 3600)
      .setExpirationTime(now - 60)
      .sign(keys.current.secret);
    await expect(tokens.verify(expired)).rejects.toThrow("access token expired");

    await expect(tokens.verify("not-a-jwt")).rejects.toThrow("invalid credential");
  });
});
