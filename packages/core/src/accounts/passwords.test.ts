import { describe, expect, test } from "bun:test";
import { hashPassword, verifyPassword } from "./passwords.ts";

describe("passwords", () => {
  test("hashes are argon2id and verify only the right password", async () => {
    const hash = await hashPassword("correct horse battery");
    expect(hash).toStartWith("$argon2id$");
    expect(await verifyPassword("correct horse battery", hash)).toBe(true);
    expect(await verifyPassword("wrong horse battery", hash)).toBe(false);
  });

  test("without a user no password verifies", async () => {
    expect(await verifyPassword("no user has this password; it only spends time", undefined)).toBe(false);
  });
});
