export const MIN_PASSWORD_LENGTH = 10;
/** Bounds the hashing work one request can ask for. */
export const MAX_PASSWORD_LENGTH = 1024;

/** What each new argon2id hash costs (`PASSWORD_HASH_MEMORY_KIB`, `PASSWORD_HASH_TIME_COST`). */
export interface PasswordHashCost {
  /** KiB. */
  memoryCost: number;
  timeCost: number;
}

export function hashPassword(cost: PasswordHashCost, password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: "argon2id", ...cost });
}

const dummyHashes = new Map<string, Promise<string>>();

/**
 * Checks a password against a user's hash (made at whatever cost it was made), or, when there
 * is no such user, against a hash made at the current cost, so that an unknown email costs
 * the same time as a wrong password and answers the same.
 */
export async function verifyPassword(
  cost: PasswordHashCost,
  password: string,
  hash: string | undefined,
): Promise<boolean> {
  const costKey = `${cost.memoryCost}/${cost.timeCost}`;
  let dummy = dummyHashes.get(costKey);
  if (!dummy) {
    dummy = hashPassword(cost, "no user has this password; it only spends time");
    dummyHashes.set(costKey, dummy);
  }
  const matches = await Bun.password.verify(password, hash ?? (await dummy));
  return hash !== undefined && matches;
}
