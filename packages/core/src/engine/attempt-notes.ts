import type { AttemptRecord, HttpCallRecord, StepLogLine } from "@platform/db";
import { MAX_ERROR_TEXT } from "./error-text.ts";
import type { RecordBudget } from "./record-budget.ts";
import type { RunSecrets } from "./run-secrets.ts";
import type { CapturedLogs } from "./sandbox/console.ts";

/**
 * What a step attempt tells beside its output, kept with the attempt so that a flow's author
 * can see why a step failed from the run alone: the lines a `js` step wrote with `console`,
 * the call an `http.request` made. Both pass through the run's secrets (redacted as its
 * error texts are) before anything is kept; console lines are bounded per attempt
 * (STEP_LOG_MAX_LINES, STEP_LOG_MAX_BYTES) and per run (RUN_LOG_MAX_BYTES, and what the run
 * may still record: record-budget.ts), a line past them cut with TRUNCATED, and the lines
 * past them counted in one last line.
 */

/** A step function's report (see `StepContext.note`). */
export interface AttemptNote {
  logs?: CapturedLogs;
  /** The call as made; its URL is redacted here. */
  http?: HttpCallRecord;
}

export interface LogLimits {
  /** Lines one attempt keeps (STEP_LOG_MAX_LINES). */
  stepLines: number;
  /** Bytes of them one attempt keeps (STEP_LOG_MAX_BYTES). */
  stepBytes: number;
  /** Bytes of them one run keeps (RUN_LOG_MAX_BYTES). */
  runBytes: number;
}

export const DEFAULT_LOG_LIMITS: LogLimits = { stepLines: 100, stepBytes: 16 * 1024, runBytes: 64 * 1024 };

/** Ends a line that was cut. */
export const TRUNCATED = "… [truncated]";
const TRUNCATED_BYTES = Buffer.byteLength(TRUNCATED);

const encoder = new TextEncoder();

/** The longest start of `text` that is at most `bytes` bytes of UTF-8 (never half a character). */
function startOf(text: string, bytes: number): string {
  const { read } = encoder.encodeInto(text, new Uint8Array(bytes));
  return text.slice(0, read);
}

const droppedText = (dropped: number, limits: LogLimits) =>
  `… ${dropped.toLocaleString("en")} more line${dropped === 1 ? "" : "s"} dropped: an attempt keeps ${limits.stepLines.toLocaleString("en")} lines and ${limits.stepBytes.toLocaleString("en")} bytes of them, a run ${limits.runBytes.toLocaleString("en")} bytes`;

/** The console lines as the run keeps them: redacted, within the bounds, counted in the run's budget. */
function keptLines(logs: CapturedLogs, secrets: RunSecrets, budget: RecordBudget, limits: LogLimits): StepLogLine[] {
  const kept: StepLogLine[] = [];
  let dropped = logs.dropped;
  let stepRoom = limits.stepBytes;
  for (const [index, line] of logs.lines.entries()) {
    const room = Math.min(stepRoom, budget.logRoom());
    const text = secrets.redact(line.message, line.cut);
    const whole = !line.cut && Buffer.byteLength(text) <= room;
    if (kept.length >= limits.stepLines || (!whole && room <= TRUNCATED_BYTES)) {
      dropped += logs.lines.length - index;
      break;
    }
    const message = whole ? text : `${startOf(text, room - TRUNCATED_BYTES)}${TRUNCATED}`;
    const bytes = Buffer.byteLength(message);
    stepRoom -= bytes;
    budget.countLogs(bytes);
    kept.push({ level: line.level, message, at: new Date(line.at).toISOString() });
  }
  if (dropped > 0) {
    const message = droppedText(dropped, limits);
    // counted though there be no room: a few bytes that say what is missing
    budget.countLogs(Buffer.byteLength(message));
    const at = logs.lines.at(-1)?.at ?? Date.now();
    kept.push({ level: "warn", message, at: new Date(at).toISOString() });
  }
  return kept;
}

/**
 * The notes of one attempt, heard until it ends: `keep` writes them into its record once;
 * a note that comes later (from a function still running past the attempt's timeout) is
 * ignored.
 */
export function attemptNotes(secrets: RunSecrets, budget: RecordBudget, limits: LogLimits) {
  const notes: AttemptNote[] = [];
  let open = true;
  return {
    note(note: AttemptNote) {
      if (open) notes.push(note);
    },
    keep(attempt: AttemptRecord) {
      if (!open) return;
      open = false;
      for (const { logs, http } of notes) {
        if (logs) attempt.logs = [...(attempt.logs ?? []), ...keptLines(logs, secrets, budget, limits)];
        if (http) {
          const url = secrets.redact(http.url);
          attempt.http = { ...http, url: url.length > MAX_ERROR_TEXT ? `${url.slice(0, MAX_ERROR_TEXT)}…` : url };
        }
      }
    },
  };
}
