/** The SQLSTATE of a database error, as both pg and PGlite report it; undefined for anything else. */
function sqlState(error: unknown): string | undefined {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** PostgreSQL's unique_violation. */
export function isUniqueViolation(error: unknown): boolean {
  return sqlState(error) === "23505";
}

/**
 * Whether a statement failed because of the values it was given rather than the database:
 * a data exception (class 22: invalid text, untranslatable characters, out of range), an
 * integrity violation (23) or a program limit (54: a value or row too large). Another try
 * fails the same way, and only the rows at fault are to blame; a lost connection, a
 * shutdown or a timeout (no SQLSTATE, classes 08, 57) is the database's. So is a run id
 * with no partition of runs to go to (a check violation too): partitions are made a week
 * ahead by the worker (packages/db/src/run-partitions.ts), and a deployment without one for
 * that long refuses every run, whoever's.
 */
export function isRowFault(error: unknown): boolean {
  const state = sqlState(error);
  if (state === "23514" && error instanceof Error && error.message.startsWith("no partition of relation")) return false;
  return state !== undefined && ["22", "23", "54"].includes(state.slice(0, 2));
}

/**
 * A database error as a person reads it: its message, and its detail when it has one (why
 * `unsupported Unicode escape sequence`: `\u0000 cannot be converted to text.`).
 */
export function databaseErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const detail = typeof error === "object" && error !== null ? (error as { detail?: unknown }).detail : undefined;
  return typeof detail === "string" && detail !== "" ? `${message} (${detail})` : message;
}
