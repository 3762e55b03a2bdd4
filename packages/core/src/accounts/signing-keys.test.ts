import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GENERATED_KEYS_FILE, generateSigningKeyText, loadSigningKeys, parseSigningKeys } from "./signing-keys.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "signing-keys-"));
  dirs.push(dir);
  return dir;
}

describe("signing keys", () => {
  test("the first configured key signs and every listed key verifies", () => {
    const first = generateSigningKeyText();
    const second = generateSigningKeyText().replace(/^[^:]+/, "old");
    const ring = parseSigningKeys(`${first},${second}`);
    expect(ring.current.kid).toBe(first.split(":")[0] as string);
    expect([...ring.byKid.keys()]).toEqual([ring.current.kid, "old"]);
    expect(ring.current.secret.byteLength).toBe(32);
  });

  test("a kid listed twice is refused: tokens signed with the first secret would be checked against the second", () => {
    const secret = () => generateSigningKeyText().split(":")[1] as string;
    expect(() => parseSigningKeys(`k1:${secret()},k1:${secret()}`)).toThrow("signing key k1 is listed twice");
  });

  test("keys generated in the same millisecond still have kids of their own", () => {
    const kids = Array.from({ length: 50 }, () => generateSigningKeyText().split(":")[0]);
    expect(new Set(kids).size).toBe(50);
  });

  test("a secret shorter than 32 bytes is refused", () => {
    expect(() => parseSigningKeys(`k1:${Buffer.alloc(16).toString("base64url")}`)).toThrow("shorter than 32 bytes");
  });

  test("without configuration a key is generated once into the data directory, readable only by its owner", async () => {
    const dir = join(freshDir(), "nested");
    const [first, concurrent] = await Promise.all([loadSigningKeys(undefined, dir), loadSigningKeys(undefined, dir)]);
    const again = await loadSigningKeys(undefined, dir);
    expect(concurrent.current.kid).toBe(first.current.kid);
    expect(again.current.secret).toEqual(first.current.secret);
    expect(statSync(join(dir, GENERATED_KEYS_FILE)).mode & 0o777).toBe(0o600);
  });

  test("configured keys win over a generated file", async () => {
    const dir = freshDir();
    await loadSigningKeys(undefined, dir);
    const configured = generateSigningKeyText().replace(/^[^:]+/, "configured");
    expect((await loadSigningKeys(configured, dir)).current.kid).toBe("configured");
  });
});
