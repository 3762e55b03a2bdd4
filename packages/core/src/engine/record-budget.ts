import type { StepRecord, StepRecords } from "./records.ts";
import { StepFailure } from "./step-failure.ts";

/**
 * What one run records in all, held within its plan's `run_record_bytes`: its steps' outputs
 * (as JSON) and error texts, in bytes of UTF-8. A step's bookkeeping (its status and times,
 * a delay's end) is not counted. The count starts from what earlier deliveries of the run
 * wrote (`runs.recorded_bytes`) and goes to the database with each write.
 *
 * An output is counted as its step ends with it; one that would take the run past its limit
 * is refused instead: its step fails naming the limit (not retried) and, unless a `catch`
 * handles it, the run fails; what it recorded before stays. A control step's output (a
 * for-each's list, a step a handler answered for) is recorded again, and counted again.
 * Error texts are counted but never refused: each is at most MAX_ERROR_TEXT characters, and
 * a run they take past its limit has its next output refused.
 */
export interface RecordBudget {
  /** Bytes the run has recorded so far. */
  readonly used: number;
  /**
   * Counts an output (its JSON, which STEP_OUTPUT_MAX_BYTES let through: it can be written);
   * when it does not fit, counts nothing and answers the failure its step ends with.
   */
  admit(output: unknown): StepFailure | undefined;
  /** Counts the error texts of the record of step `key` that were not counted yet. */
  countErrors(key: string, record: StepRecord): void;
}

/** The run's plan's limit on what one run records, and the plan's name for the refusal. */
export interface RecordQuota {
  limit: number;
  plan: string;
}

/** Bytes of the error texts a record holds: its error and each attempt's. */
function errorBytes(record: StepRecord): number {
  let bytes = record.error === undefined ? 0 : Buffer.byteLength(record.error);
  for (const attempt of record.attempts) {
    if (attempt.error !== undefined) bytes += Buffer.byteLength(attempt.error);
  }
  return bytes;
}

/**
 * The budget of a run that has recorded `recorded` bytes in earlier deliveries, with the
 * step records they left (`loaded`, whose errors are in that count already).
 */
export function createRecordBudget(quota: RecordQuota, recorded: number, loaded: StepRecords): RecordBudget {
  let used = recorded;
  /** The error bytes of each step's record counted so far. */
  const counted = new Map<string, number>();
  for (const [key, record] of Object.entries(loaded)) counted.set(key, errorBytes(record));
  return {
    get used() {
      return used;
    },
    admit(output) {
      const bytes = Buffer.byteLength(JSON.stringify(output ?? null));
      if (used + bytes <= quota.limit) {
        used += bytes;
        return undefined;
      }
      return new StepFailure(
        `the run has recorded ${used.toLocaleString("en")} of the ${quota.limit.toLocaleString("en")} bytes the ${quota.plan} plan lets one run record (run_record_bytes); this output of ${bytes.toLocaleString("en")} bytes does not fit`,
        false,
      );
    },
    countErrors(key, record) {
      const bytes = errorBytes(record);
      const before = counted.get(key) ?? 0;
      if (bytes <= before) return;
      used += bytes - before;
      counted.set(key, bytes);
    },
  };
}
