import { isRowFault } from "../database-errors.ts";
import { messageOf } from "../errors.ts";
import { recordableErrorText } from "./error-text.ts";
import { isRetryable } from "./step-functions.ts";

/**
 * Why a delivery of a run failed in a way every later delivery would fail too, as the
 * run's error; undefined when another delivery may do better. Such a run is failed once, with
 * this text, and its entry acknowledged: tried again, it would be dead-lettered, queued again
 * and dead-lettered again without end. Unfixable are the database refusing the run's own
 * values (`isRowFault`: a data exception, a violated constraint, a program limit such as an
 * index entry too large) and the failures a step would not retry either (an expression's
 * error, a bad value). A lost connection, a timeout or the broker being away is retried.
 */
export function unfixableFailure(error: unknown): string | undefined {
  if (isRowFault(error)) {
    return recordableErrorText(`the run cannot be stored: ${messageOf(error)} (another try would fail the same way)`);
  }
  if (!isRetryable(error)) return recordableErrorText(messageOf(error));
  return undefined;
}
