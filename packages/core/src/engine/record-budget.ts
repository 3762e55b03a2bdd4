import type { StepRecord, StepRecords } from "./records.ts";
import { StepFailure } from "./step-failure.ts";

/**
 * What one run records in all, held within its plan's `run_record_bytes`: its steps' outputs
 * (as JSON), error texts, console lines and the URLs of their calls, in bytes of UTF-8. A
 * step's bookkeeping (its status and times, a delay's end, a call's status and sizes) is not
 * counted. The count starts from what earlier deliveries of the run
 * wrote (`runs.recorded_bytes`) and goes to the database with each write.
 *
 * An output is counted as its step ends with it; one that would take the run past its limit
 * is refused instead: its step fails naming the limit (not retried) and, unless a `catch`
 * handles it, the run fails; what it recorded before stays. A control step's output (a
 * for-each's list, a step a handler answered for) is recorded again, and counted again.
 * Error texts and URLs are counted but never refused: each is at most MAX_ERROR_TEXT
 * characters, and a run they take past its limit has its next output refused. Console lines
 * are kept only as far as there is room (see attempt-notes.ts): within the run's own bound
 * on them (RUN_LOG_MAX_BYTES) and its record limit.
 */
export interface RecordBudget {
  /** Bytes the run has recorded so far. */
  readonly used: number;
  /**
   * Counts an output (its JSON, which STEP_OUTPUT_MAX_BYTES let through: it can be written;
   * `bytes`, its size, when the caller has written it already); when it does not fit, counts
   * nothing and answers the failure its step ends with.
   */
  admit(output: unknown, bytes?: number): StepFailure | undefined;
  /** Counts the error texts (and call URLs) of the record of step `key` that were not counted yet. */
  countErrors(key: string, record: StepRecord): void;
  /** Bytes of console lines the run may still record: what its bound on them and its record limit leave. */
  logRoom(): number;
  /** Counts console lines the run records (at most `logRoom()`). */
  countLogs(bytes: number): void;
}

/** The run's plan's limit on what one run records, and the plan's name for the refusal. */
export interface RecordQuota {
  limit: number;
  plan: string;
  /** Most bytes of console lines one run keeps (RUN_LOG_MAX_BYTES); none: only `limit` bounds them. */
  logs?: number;
}

/** Bytes of the error texts a record holds: its error and each attempt's, and each attempt's call URL. */
function errorBytes(record: StepRecord): number {
  let bytes = record.error === undefined ? 0 : Buffer.byteLength(record.error);
  for (const attempt of record.attempts) {
    if (attempt.error !== undefined) bytes += Buffer.byteLength(attempt.error);
    if (attempt.http !== undefined) bytes += Buffer.byteLength(attempt.http.url);
  }
  return bytes;
}

/** Bytes of the console lines a record holds. */
export function logBytes(record: StepRecord): number {
  let bytes = 0;
  for (const attempt of record.attempts) {
    for (const line of attempt.logs ?? []) bytes += Buffer.byteLength(line.message);
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
  /** Bytes of console lines the run has recorded (all in `used` too). */
  let logs = 0;
  for (const [key, record] of Object.entries(loaded)) {
    counted.set(key, errorBytes(record));
    logs += logBytes(record);
  }
  return {
    get used() {
      return used;
    },
    admit(output, bytes = Buffer.byteLength(JSON.stringify(output ?? null))) {
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
    logRoom() {
      return Math.max(0, Math.min((quota.logs ?? Number.POSITIVE_INFINITY) - logs, quota.limit - used));
    },
    countLogs(bytes) {
      logs += bytes;
      used += bytes;
    },
  };
}
