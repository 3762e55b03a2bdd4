import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { DomainError } from "./errors.ts";
import { keptInDataDir } from "./key-files.ts";

/**
 * Encryption at rest for secrets kept in the database (secret values, TOTP secrets):
 * AES-256-GCM with a fresh 96-bit IV per value. `context` (e.g. `totp:<user id>`) is
 * bound as associated data, so a sealed value copied to another row does not open there.
 *
 * Values are written `v2.<key id>.<iv>.<body>`: the id names the key that sealed them, so
 * `SECRETS_KEY` can list older keys that still open values while the first one seals
 * (rotation; `bun run secrets:reseal` moves every value to the first key). Values written
 * before key ids existed (`v1.<iv>.<body>`) are opened by trying each listed key.
 */
export interface Sealer {
  seal(plaintext: string, context: string): string;
  /** Throws when the value was altered, sealed for another context, or with a key not listed. */
  open(sealed: string, context: string): string;
  /** What every value sealed under the current key starts with (`v2.<key id>.`); re-sealing those changes nothing. */
  readonly currentPrefix: string;
}

export interface SecretsKey {
  id: string;
  key: Uint8Array;
}

/** The key that seals, and every key that still opens (the sealing one included). */
export interface SecretsKeyRing {
  current: SecretsKey;
  byId: Map<string, SecretsKey>;
}

const LEGACY_VERSION = "v1";
const VERSION = "v2";
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const SECRETS_KEY_FILE = "secrets-key";

/** A key id: what `SECRETS_KEY` may name a key (`kid:key`). Dots are the sealed format's separator. */
const SECRETS_KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;

/** The id of a key listed without one: the first 12 hex digits of its SHA-256, the same in every process. */
export function derivedKeyId(key: Uint8Array): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 12);
}

/**
 * Parses `SECRETS_KEY`: one base64url key of 32 bytes (43 characters), or a list
 * `kid:key[,kid:key...]` whose entries may also be bare keys (named by `derivedKeyId`).
 * The first key seals; all of them open.
 */
export function parseSecretsKeys(text: string): SecretsKeyRing {
  const keys = text
    .trim()
    .split(",")
    .map((entry): SecretsKey => {
      const parts = entry.trim().split(":");
      const encoded = parts.length === 1 ? parts[0] : parts[1];
      if (parts.length > 2 || !encoded) throw new Error("SECRETS_KEY must be key or kid:key[,kid:key...]");
      const key = new Uint8Array(Buffer.from(encoded, "base64url"));
      if (key.byteLength !== 32 || !/^[\w-]{43}$/.test(encoded)) {
        throw new Error("SECRETS_KEY keys must be 32 bytes, base64url-encoded (43 characters)");
      }
      const id = parts.length === 1 ? derivedKeyId(key) : (parts[0] ?? "");
      if (!SECRETS_KEY_ID.test(id)) throw new Error(`SECRETS_KEY key id "${id}" must be 1-32 letters, digits, _ or -`);
      return { id, key };
    });
  const current = keys[0];
  if (!current) throw new Error("SECRETS_KEY lists no key");
  const byId = new Map<string, SecretsKey>();
  for (const key of keys) {
    if (byId.has(key.id)) throw new Error(`SECRETS_KEY lists key id ${key.id} twice`);
    byId.set(key.id, key);
  }
  return { current, byId };
}

function sealWith(key: Uint8Array, plaintext: string, context: string): { iv: string; body: string } {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv).setAAD(Buffer.from(context, "utf8"));
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return { iv: iv.toString("base64url"), body: body.toString("base64url") };
}

function openWith(key: Uint8Array, ivText: string, bodyText: string, context: string): string {
  const body = Buffer.from(bodyText, "base64url");
  if (body.byteLength < TAG_BYTES) throw new Error("not a sealed value");
  const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(ivText, "base64url"))
    .setAAD(Buffer.from(context, "utf8"))
    .setAuthTag(body.subarray(body.byteLength - TAG_BYTES));
  return Buffer.concat([decipher.update(body.subarray(0, body.byteLength - TAG_BYTES)), decipher.final()]).toString(
    "utf8",
  );
}

function openLegacy(keys: Iterable<SecretsKey>, ivText: string, bodyText: string, context: string): string {
  for (const { key } of keys) {
    try {
      return openWith(key, ivText, bodyText, context);
    } catch {
      // Not this key (or not this context): the next one may be it.
    }
  }
  throw new Error("no listed key opens this value");
}

export function createSealer(ring: SecretsKeyRing): Sealer {
  const currentPrefix = `${VERSION}.${ring.current.id}.`;
  return {
    currentPrefix,
    seal(plaintext, context) {
      const { iv, body } = sealWith(ring.current.key, plaintext, context);
      return `${currentPrefix}${iv}.${body}`;
    },
    open(sealed, context) {
      const parts = sealed.split(".");
      if (parts[0] === LEGACY_VERSION && parts.length === 3 && parts[1] && parts[2]) {
        return openLegacy(ring.byId.values(), parts[1], parts[2], context);
      }
      const [version, id, ivText, bodyText] = parts;
      if (version !== VERSION || parts.length !== 4 || !id || !ivText || !bodyText) {
        throw new Error("not a sealed value");
      }
      const key = ring.byId.get(id);
      if (!key) throw new Error(`sealed with key ${id}, which SECRETS_KEY does not list`);
      return openWith(key.key, ivText, bodyText, context);
    },
  };
}

/** `SECRETS_KEY`, or in embedded mode the key generated once into `dataDir` (which may be edited to a list too). */
export async function loadSecretsKeys(configured: string | undefined, dataDir: string): Promise<SecretsKeyRing> {
  const text =
    configured ?? (await keptInDataDir(dataDir, SECRETS_KEY_FILE, () => randomBytes(32).toString("base64url")));
  return parseSecretsKeys(text);
}

/**
 * Opens a sealed value the platform itself stored; one that no listed key opens is an
 * internal error (500, logged with the sealer's error as its cause), named by `what`.
 */
export function openSealed(sealer: Sealer, sealed: string, context: string, what: string): string {
  try {
    return sealer.open(sealed, context);
  } catch (error) {
    throw new DomainError("internal_error", `${what} could not be opened`, { cause: error });
  }
}
