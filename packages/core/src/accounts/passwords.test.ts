import { describe, expect, test } from "bun:test";
import { hashPassword, verifyPassword } from "./passwords.ts";

const DEFAULT_COST = { memoryCost: 65_536, timeCost: 2 };
const FLOOR_COST = { memoryCost: 19_456, timeCost: 2 };

describe("passwords", () => {
  test("hashes are argon2id at the configured cost and verify only the right password", async () => {
    const hash = await hashPassword(DEFAULT_COST, "correct horse battery");
    expect(hash).toStartWith("$argon2id$v=19$m=65536,t=2,");
    expect(await verifyPassword(DEFAULT_COST, "correct horse battery", hash)).toBe(true);
    expect(await verifyPassword(DEFAULT_COST, "wrong horse battery", hash)).toBe(false);
  });

  test("a hash made at another cost still verifies after the cost changes", async () => {
    const hash = await hashPassword(FLOOR_COST, "correct horse battery");
    expect(hash).toStartWith("$argon2id$v=19$m=19456,t=2,");
    expect(await verifyPassword(DEFAULT_COST, "correct horse battery", hash)).toBe(true);
  });

  test("without a user no password verifies", async () => {
    expect(await verifyPassword(DEFAULT_COST, "no user has this password; it only spends time", undefined)).toBe(false);
  });
});
