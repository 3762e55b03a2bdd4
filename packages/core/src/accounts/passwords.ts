export const MIN_PASSWORD_LENGTH = 10;
/** Bounds the hashing work one request can ask for. */
export const MAX_PASSWORD_LENGTH = 1024;

const ARGON2ID = { algorithm: "argon2id" } as const;

export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, ARGON2ID);
}

let dummyHash: Promise<string> | undefined;

/**
 * Checks a password against a user's hash, or, when there is no such user, against a
 * hash made with the same parameters, so that an unknown email costs the same time
 * as a wrong password and answers the same.
 */
export async function verifyPassword(password: string, hash: string | undefined): Promise<boolean> {
  dummyHash ??= hashPassword("no user has this password; it only spends time");
  const matches = await Bun.password.verify(password, hash ?? (await dummyHash));
  return hash !== undefined && matches;
}
