import { describe, expect, test } from "bun:test";
import { SignJWT } from "jose";
import { type AccessTokens, createAccessTokens } from "./access-tokens.ts";
import { generateSigningKeyText, parseSigningKeys } from "./signing-keys.ts";
import { rememberVerifiedTokens } from "./verified-tokens.ts";

const claims = { userId: "user-1", accountId: "account-1", sessionId: "session-1" };

/** Real tokens, with a count of the signature checks that actually ran. */
function countedTokens(ttlSeconds = 900): {
  tokens: AccessTokens;
  checks: () => number;
  secret: Uint8Array;
  kid: string;
} {
  const keys = parseSigningKeys(generateSigningKeyText());
  const real = createAccessTokens(keys, ttlSeconds);
  let checks = 0;
  const tokens: AccessTokens = {
    issue: (c) => real.issue(c),
    verify: (token) => {
      checks += 1;
      return real.verify(token);
    },
  };
  return { tokens, checks: () => checks, secret: keys.current.secret, kid: keys.current.kid };
}

describe("remembered token verification", () => {
  test("a token that verified once is accepted again without another signature check", async () => {
    const counted = countedTokens();
    const tokens = rememberVerifiedTokens(counted.tokens);
    const token = await tokens.issue(claims);
    expect(await tokens.verify(token)).toEqual(claims);
    expect(await tokens.verify(token)).toEqual(claims);
    expect(counted.checks()).toBe(1);
  });

  test("a forged token is refused every time: failures are never remembered", async () => {
    const counted = countedTokens();
    const tokens = rememberVerifiedTokens(counted.tokens);
    const forged = await new SignJWT({ acc: "account-1", sid: "session-1" })
      .setProtectedHeader({ alg: "HS256", kid: counted.kid })
      .setSubject("user-1")
      .setIssuer("workflow-platform")
      .setAudience("workflow-platform-api")
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(parseSigningKeys(generateSigningKeyText()).current.secret);
    await expect(tokens.verify(forged)).rejects.toThrow("invalid credential");
    await expect(tokens.verify(forged)).rejects.toThrow("invalid credential");
    expect(counted.checks()).toBe(2);
  });

  test("a remembered token is refused as expired once its expiry has passed", async () => {
    const counted = countedTokens(1);
    const tokens = rememberVerifiedTokens(counted.tokens);
    const token = await tokens.issue(claims);
    expect(await tokens.verify(token)).toEqual(claims);
    await Bun.sleep(1100);
    await expect(tokens.verify(token)).rejects.toThrow("access token expired");
  });

  test("the oldest token makes room when the cache is full", async () => {
    const counted = countedTokens();
    const tokens = rememberVerifiedTokens(counted.tokens, { maxEntries: 2 });
    const [a, b, c] = await Promise.all(
      ["s-a", "s-b", "s-c"].map((sessionId) => tokens.issue({ ...claims, sessionId })),
    );
    for (const token of [a, b, c]) await tokens.verify(token as string);
    await tokens.verify(c as string);
    await tokens.verify(b as string);
    expect(counted.checks()).toBe(3);
    await tokens.verify(a as string);
    expect(counted.checks()).toBe(4);
  });
});
