import { DomainError } from "../../errors.ts";
import { QuotaExceeded } from "../port.ts";

/** SQLSTATE classes that mean "the database is not there", not "the query is wrong". */
const OUTAGE_STATES = /^(08|57P|53)/;

/**
 * Maps a failed query to the broker's errors: a lost or refused connection (a Node
 * socket error, a pool timeout, a closed PGlite, SQLSTATE 08xxx/57Pxx/53xxx) becomes
 * `unavailable`; any other database error is a bug and keeps its own message. A refusal
 * (a DomainError, a quota) is what it is.
 */
export function toBrokerError(error: unknown): Error {
  if (error instanceof DomainError || error instanceof QuotaExceeded) return error;
  const code =
    typeof error === "object" && error !== null && "code" in error ? (error as { code: unknown }).code : undefined;
  const isSqlState = typeof code === "string" && /^[0-9A-Z]{5}$/.test(code);
  if (isSqlState && !OUTAGE_STATES.test(code)) return error instanceof Error ? error : new Error(String(error));
  return new DomainError("unavailable", "the broker (PostgreSQL) is unavailable");
}

export async function guarded<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw toBrokerError(error);
  }
}

/** Entry ids are the decimal sequence numbers this adapter hands out. */
export function parseEntryIds(ids: string[]): string {
  for (const id of ids) {
    if (!/^\d{1,18}$/.test(id)) throw new DomainError("validation_error", "not a stream entry id");
  }
  return `{${ids.join(",")}}`;
}

export function parseEntryId(id: string): number {
  if (!/^\d{1,18}$/.test(id)) throw new DomainError("validation_error", "not a stream entry id");
  return Number(id);
}
