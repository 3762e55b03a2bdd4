import { describe, expect, test } from "bun:test";
import { indexedKey, MAX_INDEXED_KEY_LENGTH } from "./indexed-key.ts";

describe("indexedKey", () => {
  test("a short key is kept as it is; a longer one, or one with a NUL, as its digest", () => {
    const short = "k".repeat(MAX_INDEXED_KEY_LENGTH);
    expect(indexedKey(short)).toBe(short);
    expect(indexedKey("")).toBe("");
    const long = indexedKey(`${short}a`);
    expect(long).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(indexedKey(`${short}b`)).not.toBe(long);
    expect(indexedKey(`${short}a`)).toBe(long);
    expect(indexedKey("a\u0000b")).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});
