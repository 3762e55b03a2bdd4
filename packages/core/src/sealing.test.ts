import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSealer, derivedKeyId, loadSecretsKeys, parseSecretsKeys, SECRETS_KEY_FILE } from "./sealing.ts";
import { sealedByFirstRelease } from "./sealing-fixtures.ts";

const newKey = () => randomBytes(32).toString("base64url");
const sealerFor = (keys: string) => createSealer(parseSecretsKeys(keys));

describe("sealing secrets at rest", () => {
  const sealer = sealerFor(`main:${newKey()}`);

  test("a sealed value opens to the original, names its key, and never shows the plaintext", () => {
    const sealed = sealer.seal("JBSWY3DPEHPK3PXP", "totp:user-1");
    expect(sealed).not.toContain("JBSWY3DPEHPK3PXP");
    expect(sealed).toStartWith("v2.main.");
    expect(sealer.currentPrefix).toBe("v2.main.");
    expect(sealer.open(sealed, "totp:user-1")).toBe("JBSWY3DPEHPK3PXP");
    expect(sealer.seal("JBSWY3DPEHPK3PXP", "totp:user-1")).not.toBe(sealed);
  });

  test("a value altered, moved to another row, or opened with another key is refused", () => {
    const sealed = sealer.seal("secret", "totp:user-1");
    const [version, kid, iv, body] = sealed.split(".") as [string, string, string, string];
    const flipped = Buffer.from(body, "base64url");
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    expect(() => sealer.open(`${version}.${kid}.${iv}.${flipped.toString("base64url")}`, "totp:user-1")).toThrow();
    expect(() => sealer.open(sealed, "totp:user-2")).toThrow();
    expect(() => sealerFor(`main:${newKey()}`).open(sealed, "totp:user-1")).toThrow();
    expect(() => sealerFor(`other:${newKey()}`).open(sealed, "totp:user-1")).toThrow(
      "sealed with key main, which SECRETS_KEY does not list",
    );
    expect(() => sealer.open("JBSWY3DPEHPK3PXP", "totp:user-1")).toThrow("not a sealed value");
    expect(() => sealer.open("v2.main.x", "totp:user-1")).toThrow("not a sealed value");
  });

  test("after a rotation the new key seals and the old one still opens what it sealed", () => {
    const oldKey = newKey();
    const before = sealerFor(`old:${oldKey}`);
    const sealedBefore = before.seal("hunter2", "secret:acc:db");
    const rotated = sealerFor(`new:${newKey()},old:${oldKey}`);
    expect(rotated.open(sealedBefore, "secret:acc:db")).toBe("hunter2");
    const sealedAfter = rotated.seal("hunter2", "secret:acc:db");
    expect(sealedAfter).toStartWith("v2.new.");
    expect(() => before.open(sealedAfter, "secret:acc:db")).toThrow();
  });

  test("values of the first release (v1, no key id) open under whichever listed key sealed them", () => {
    const oldKey = newKey();
    const legacy = sealedByFirstRelease(oldKey, "JBSWY3DPEHPK3PXP", "totp:user-1");
    expect(sealerFor(oldKey).open(legacy, "totp:user-1")).toBe("JBSWY3DPEHPK3PXP");
    expect(sealerFor(`new:${newKey()},${oldKey}`).open(legacy, "totp:user-1")).toBe("JBSWY3DPEHPK3PXP");
    expect(() => sealerFor(oldKey).open(legacy, "totp:user-2")).toThrow("no listed key opens this value");
    expect(() => sealerFor(newKey()).open(legacy, "totp:user-1")).toThrow("no listed key opens this value");
  });

  test("a bare key gets an id derived from it, the same in every process", () => {
    const bare = newKey();
    const ring = parseSecretsKeys(bare);
    expect(ring.current.id).toMatch(/^[0-9a-f]{12}$/);
    expect(ring.current.id).toBe(derivedKeyId(new Uint8Array(Buffer.from(bare, "base64url"))));
    const sealed = sealerFor(bare).seal("x", "c");
    expect(sealed).toStartWith(`v2.${ring.current.id}.`);
    // Listed bare after a new key, it still opens what it sealed.
    expect(sealerFor(`next:${newKey()},${bare}`).open(sealed, "c")).toBe("x");
  });

  test("malformed key lists are refused with a reason", () => {
    expect(() => parseSecretsKeys(randomBytes(16).toString("base64url"))).toThrow("32 bytes");
    expect(() => parseSecretsKeys(`a:${newKey()},a:${newKey()}`)).toThrow("SECRETS_KEY lists key id a twice");
    expect(() => parseSecretsKeys(`a.b:${newKey()}`)).toThrow('key id "a.b"');
    expect(() => parseSecretsKeys(`a:b:${newKey()}`)).toThrow("kid:key");
    expect(() => parseSecretsKeys(`a:${newKey()},`)).toThrow("kid:key");
  });

  test("without SECRETS_KEY a key is generated once into the data directory, readable only by its owner", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "secrets-key-"));
    try {
      const first = await loadSecretsKeys(undefined, dataDir);
      const again = await loadSecretsKeys(undefined, dataDir);
      expect(again.current.id).toBe(first.current.id);
      expect(Buffer.from(again.current.key).equals(Buffer.from(first.current.key))).toBe(true);
      expect(statSync(join(dataDir, SECRETS_KEY_FILE)).mode & 0o777).toBe(0o600);

      const configured = newKey();
      const chosen = await loadSecretsKeys(`main:${configured}`, dataDir);
      expect(chosen.current.id).toBe("main");
      expect(Buffer.from(chosen.current.key).toString("base64url")).toBe(configured);

      // The generated file may be edited into a list to rotate an embedded deployment.
      const rotatedIn = newKey();
      writeFileSync(
        join(dataDir, SECRETS_KEY_FILE),
        `next:${rotatedIn},${Buffer.from(first.current.key).toString("base64url")}\n`,
      );
      const rotated = await loadSecretsKeys(undefined, dataDir);
      expect(rotated.current.id).toBe("next");
      expect(rotated.byId.has(first.current.id)).toBe(true);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
