/**
 * The `console` a js step's code sees: `log`, `info`, `warn`, `error` and `debug` format their
 * values as console does (strings as they are, errors as `Name: message`, numbers and the
 * like as text, other values as JSON) and hand the line to the host. The host keeps at most
 * `lines` lines and `chars` characters of them in all (a longer line is cut, later ones only
 * counted, inside the sandbox), so a step that logs in a loop costs a count, not memory nor
 * a call out of the sandbox per line. What is kept is raw:
 * the engine redacts it and bounds it in bytes before the run records it (attempt-notes.ts).
 */
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";

export const LOG_LEVELS = ["log", "info", "warn", "error", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** One console call as the sandbox saw it; `cut` says its text was cut at the sandbox's bound. */
export interface CapturedLine {
  level: LogLevel;
  message: string;
  /** When it was written (ms since the epoch). */
  at: number;
  cut?: boolean;
}

/** The lines an evaluation wrote, and how many more it wrote past the bounds. */
export interface CapturedLogs {
  lines: CapturedLine[];
  dropped: number;
}

export interface ConsoleLimits {
  /** Most lines kept. */
  lines: number;
  /** Most characters kept, all lines together. */
  chars: number;
}

/**
 * Defines the console in the context, given the host's `capture(level, text, cut)`: it
 * answers whether another line would be kept; once it says no, lines are only counted in
 * the state it answers (no text is made or copied for them). The state is a plain object
 * the code cannot reach: the host reads its count without running any code.
 */
const BOOTSTRAP = `(capture, maxChars) => {
  const state = { dropped: 0 };
  const show = (value) => {
    switch (typeof value) {
      case "string": return value;
      case "function": return "[Function: " + (value.name || "anonymous") + "]";
      case "bigint": return value + "n";
      case "undefined": case "number": case "boolean": case "symbol": return String(value);
    }
    if (value instanceof Error) return value.name + ": " + value.message;
    try {
      const json = JSON.stringify(value);
      return json === undefined ? String(value) : json;
    } catch {
      return String(value);
    }
  };
  let open = true;
  const method = (level) => (...values) => {
    if (!open) return void state.dropped++;
    const text = values.map(show).join(" ");
    open = text.length > maxChars ? capture(level, text.slice(0, maxChars), true) : capture(level, text, false);
  };
  const console = {};
  for (const level of ${JSON.stringify(LOG_LEVELS)}) console[level] = method(level);
  globalThis.console = console;
  return state;
}`;

export interface InstalledConsole {
  /** What the code wrote so far. Call before the context is disposed. */
  logs(): CapturedLogs;
}

/** Installs the console in `context`. */
export function installConsole(context: QuickJSContext, limits: ConsoleLimits): InstalledConsole {
  const logs: CapturedLogs = { lines: [], dropped: 0 };
  let chars = 0;
  const capture = context.newFunction("capture", (levelHandle, textHandle, cutHandle) => {
    if (logs.lines.length >= limits.lines || chars >= limits.chars) {
      logs.dropped++;
      return context.false;
    }
    const level = context.getString(levelHandle) as LogLevel;
    let message = context.getString(textHandle);
    let cut = context.dump(cutHandle) === true;
    if (chars + message.length > limits.chars) {
      message = message.slice(0, limits.chars - chars);
      cut = true;
    }
    chars += message.length;
    logs.lines.push(cut ? { level, message, at: Date.now(), cut } : { level, message, at: Date.now() });
    return logs.lines.length < limits.lines && chars < limits.chars ? context.true : context.false;
  });
  const setup = context.evalCode(BOOTSTRAP, "console.js");
  let state: QuickJSHandle;
  try {
    const install = context.unwrapResult(setup);
    const max = context.newNumber(limits.chars);
    try {
      state = context.unwrapResult(context.callFunction(install, context.undefined, capture, max));
    } finally {
      max.dispose();
      install.dispose();
    }
  } finally {
    capture.dispose();
  }
  return {
    logs() {
      const dropped = context.getProp(state, "dropped");
      const counted = context.getNumber(dropped);
      dropped.dispose();
      state.dispose();
      return { lines: logs.lines, dropped: logs.dropped + counted };
    },
  };
}
