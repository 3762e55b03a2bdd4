import { databaseErrorText, isRowFault } from "../database-errors.ts";
import { messageOf } from "../errors.ts";
import { recordableErrorText, redactSecrets } from "./error-text.ts";

/** Reads the named secrets of an account in one go; throws a step failure naming a missing one. */
export type SecretsReader = (accountId: string, keys: string[]) => Promise<Record<string, string>>;

/**
 * The secrets of one execution of a run, and the one way its failures become text. Every
 * value a step of the run reads goes through `read` and is remembered; every failure text
 * the run records (a step's error and its attempts', the run's, the `error.message` a
 * `catch` or `on_failure` step sees) is made by `failureText`, redacted of all of them. So
 * no error text holds a secret, whatever produced it (an `if`, `switch`, `for_each` or
 * `stop` expression, a payload's, an upstream's answer, user code), even a value another
 * step of the run read.
 */
export interface RunSecrets {
  /** The values of the named secrets (none named: none read). */
  read(keys: string[]): Promise<Record<string, string>>;
  /**
   * A failure as the run records it: redacted, storable and bounded (see error-text.ts); the
   * database refusing a value (`isRowFault`) says so.
   */
  failureText(failure: unknown): string;
  /** Other text the run records (a js step's console lines, a call's URL), redacted and storable; `cut`: see redactSecrets. */
  redact(text: string, cut?: boolean): string;
}

export function createRunSecrets(reader: SecretsReader, accountId: string): RunSecrets {
  const seen: Record<string, string> = {};
  return {
    async read(keys) {
      if (keys.length === 0) return {};
      const values = await reader(accountId, keys);
      Object.assign(seen, values);
      return values;
    },
    failureText: (failure) =>
      recordableErrorText(
        isRowFault(failure) ? `the value is not storable: ${databaseErrorText(failure)}` : messageOf(failure),
        seen,
      ),
    redact: (text, cut) => redactSecrets(text, seen, cut),
  };
}
