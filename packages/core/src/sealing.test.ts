import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSealer, loadSecretsKey, SECRETS_KEY_FILE } from "./sealing.ts";

describe("sealing secrets at rest", () => {
  const sealer = createSealer(randomBytes(32));

  test("a sealed value opens to the original and never shows it", () => {
    const sealed = sealer.seal("JBSWY3DPEHPK3PXP", "totp:user-1");
    expect(sealed).not.toContain("JBSWY3DPEHPK3PXP");
    expect(sealer.open(sealed, "totp:user-1")).toBe("JBSWY3DPEHPK3PXP");
    expect(sealer.seal("JBSWY3DPEHPK3PXP", "totp:user-1")).not.toBe(sealed);
  });

  test("a value altered, moved to another row, or opened with another key is refused", () => {
    const sealed = sealer.seal("secret", "totp:user-1");
    const [version, iv, body] = sealed.split(".") as [string, string, string];
    const flipped = Buffer.from(body, "base64url");
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    expect(() => sealer.open(`${version}.${iv}.${flipped.toString("base64url")}`, "totp:user-1")).toThrow();
    expect(() => sealer.open(sealed, "totp:user-2")).toThrow();
    expect(() => createSealer(randomBytes(32)).open(sealed, "totp:user-1")).toThrow();
    expect(() => sealer.open("JBSWY3DPEHPK3PXP", "totp:user-1")).toThrow("not a sealed value");
  });

  test("without SECRETS_KEY a key is generated once into the data directory, readable only by its owner", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "secrets-key-"));
    try {
      const first = await loadSecretsKey(undefined, dataDir);
      const again = await loadSecretsKey(undefined, dataDir);
      expect(Buffer.from(again).equals(Buffer.from(first))).toBe(true);
      expect(statSync(join(dataDir, SECRETS_KEY_FILE)).mode & 0o777).toBe(0o600);

      const configured = randomBytes(32);
      const chosen = await loadSecretsKey(configured.toString("base64url"), dataDir);
      expect(Buffer.from(chosen).equals(configured)).toBe(true);
      await expect(loadSecretsKey(randomBytes(16).toString("base64url"), dataDir)).rejects.toThrow("32 bytes");
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
