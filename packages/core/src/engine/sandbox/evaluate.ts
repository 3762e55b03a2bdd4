/**
 * One evaluation of user code in QuickJS (WebAssembly): a fresh runtime and context per call,
 * so nothing survives from one run to the next, with a memory limit, a stack limit and a
 * deadline checked by QuickJS's interrupt handler. Input and output cross as JSON text; the
 * context holds only the language's own objects (no process, Bun, fetch, require, timers).
 * Synchronous: callers run it on a Worker thread (see pool.ts) or accept the blocking.
 * QuickJS's own memory limit cannot see allocation sizes under Emscripten (it counts calls), so
 * the real cap is the module's WebAssembly memory (see host.ts); `outOfMemory` says it is spent.
 */
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from "quickjs-emscripten-core";
import { type CapturedLogs, type InstalledConsole, installConsole } from "./console.ts";

export interface EvaluationLimits {
  memoryBytes: number;
  stackBytes: number;
  timeoutMs: number;
  /** What the console keeps (see console.ts): lines, and characters of them in all. */
  logLines: number;
  logChars: number;
}

/**
 * JSON text of the result (`null` for undefined), or why there is none; either way what the
 * code wrote with `console` (absent when it wrote nothing, or the sandbox itself failed).
 */
export type Outcome = ({ ok: true; output: string } | { ok: false; message: string; retryable: boolean }) & {
  logs?: CapturedLogs;
};

export const timeLimitMessage = (ms: number) => `js: time limit of ${ms} ms exceeded`;
const memoryLimitMessage = (bytes: number) => `js: memory limit of ${Math.round(bytes / 1048576)} MB exceeded`;
const STACK_MESSAGE = "js: stack size limit exceeded (recursion too deep)";
const NO_FUNCTION = "js: the code must export a function: export default (input) => ...";
const NEVER_SETTLED = "js: the returned promise never settled (the sandbox has no timers or I/O)";
const MAX_MESSAGE_CHARS = 500;

class Failure {
  constructor(
    readonly message: string,
    readonly retryable = false,
  ) {}
}

interface Evaluation {
  runtime: QuickJSRuntime;
  context: QuickJSContext;
  limits: EvaluationLimits;
  interrupted: () => boolean;
  outOfMemory: () => boolean;
}

function readString(context: QuickJSContext, error: QuickJSHandle, key: string): string | undefined {
  const handle = context.getProp(error, key);
  try {
    return context.typeof(handle) === "string" ? context.getString(handle) : undefined;
  } finally {
    handle.dispose();
  }
}

/** What a thrown QuickJS value says: `Name: message` for errors, else the value as JSON. */
function describeThrown(
  context: QuickJSContext,
  error: QuickJSHandle,
): { name?: string; message?: string; text: string } {
  if (context.typeof(error) === "object") {
    const name = readString(context, error, "name");
    const message = readString(context, error, "message");
    if (name !== undefined || message !== undefined) {
      return { name, message, text: `${name ?? "Error"}: ${message ?? ""}` };
    }
  }
  const value = context.dump(error);
  return { text: `threw ${value === undefined ? "undefined" : JSON.stringify(value)}` };
}

/**
 * Turns a thrown QuickJS value into the failure the run record shows. Disposes `error`.
 * Reading it may run user code (a getter), so the deadline is looked at after reading too.
 */
function failureOf(evaluation: Evaluation, error: QuickJSHandle, what: string): Failure {
  const { context, limits } = evaluation;
  const timedOut = () => new Failure(timeLimitMessage(limits.timeoutMs));
  try {
    if (evaluation.interrupted()) return timedOut();
    const thrown = describeThrown(context, error);
    if (evaluation.interrupted()) return timedOut();
    // with no memory left even for the error object, QuickJS throws null
    const bare = thrown.text === "threw null" || thrown.text === "threw undefined";
    if (thrown.message === "out of memory" || (bare && evaluation.outOfMemory())) {
      return new Failure(memoryLimitMessage(limits.memoryBytes));
    }
    if (thrown.message === "stack overflow") return new Failure(STACK_MESSAGE);
    const text = thrown.text.startsWith("threw ") ? `${what} ${thrown.text}` : thrown.text;
    // an error of the module itself (syntax, imports, top-level code) does the same every time
    return new Failure(`js: ${text}`.slice(0, MAX_MESSAGE_CHARS), what !== "the code");
  } catch {
    return evaluation.interrupted() ? timedOut() : new Failure(`js: ${what} threw a value that cannot be read`, true);
  } finally {
    error.dispose();
  }
}

function unwrap(evaluation: Evaluation, result: ReturnType<QuickJSContext["evalCode"]>, what: string): QuickJSHandle {
  if (result.error) throw failureOf(evaluation, result.error, what);
  return result.value;
}

/** The value of `handle`, waiting for it (running the job queue) when it is a promise. Consumes `handle`. */
function settle(evaluation: Evaluation, handle: QuickJSHandle, what: string): QuickJSHandle {
  const { context, runtime } = evaluation;
  let state = context.getPromiseState(handle);
  if (state.type === "fulfilled" && state.notAPromise) return handle;
  try {
    while (state.type === "pending") {
      const jobs = runtime.executePendingJobs();
      if (jobs.error) throw failureOf(evaluation, jobs.error, what);
      state = context.getPromiseState(handle);
      if (state.type === "pending" && jobs.value === 0) throw new Failure(NEVER_SETTLED);
    }
  } finally {
    handle.dispose();
  }
  if (state.type === "rejected") throw failureOf(evaluation, state.error, what);
  return state.value;
}

function call(evaluation: Evaluation, fn: QuickJSHandle, self: QuickJSHandle, arg: QuickJSHandle, what: string) {
  const result = evaluation.context.callFunction(fn, self, arg);
  if (result.error) throw failureOf(evaluation, result.error, what);
  return result.value;
}

function run(evaluation: Evaluation, code: string, inputJson: string): string {
  const { context } = evaluation;
  const moduleResult = context.evalCode(code, "step.js", { type: "module", strict: true });
  const namespace = settle(evaluation, unwrap(evaluation, moduleResult, "the code"), "the code");
  const fn = context.getProp(namespace, "default");
  namespace.dispose();
  const json = context.getProp(context.global, "JSON");
  const parse = context.getProp(json, "parse");
  const stringify = context.getProp(json, "stringify");
  const text = context.newString(inputJson);
  try {
    if (context.typeof(fn) !== "function") throw new Failure(NO_FUNCTION);
    const input = call(evaluation, parse, json, text, "JSON.parse");
    let returned: QuickJSHandle;
    try {
      returned = call(evaluation, fn, context.undefined, input, "the function");
    } finally {
      input.dispose();
    }
    const value = settle(evaluation, returned, "the function");
    let serialized: QuickJSHandle;
    try {
      serialized = call(evaluation, stringify, json, value, "JSON.stringify");
    } catch (failure) {
      if (failure instanceof Failure && !evaluation.interrupted()) {
        throw new Failure(`js: the result cannot be turned into JSON: ${failure.message.replace(/^js: /, "")}`);
      }
      throw failure;
    } finally {
      value.dispose();
    }
    const output = context.typeof(serialized) === "string" ? context.getString(serialized) : "null";
    serialized.dispose();
    return output;
  } finally {
    for (const handle of [fn, json, parse, stringify, text]) handle.dispose();
  }
}

/**
 * The WebAssembly module can no longer be trusted: the host's own stack ran out inside QuickJS
 * (deep recursion that QuickJS's stack limit did not catch first, e.g. JSON.parse of deeply
 * nested arrays) or QuickJS aborted. The runtime is abandoned undisposed; the caller must load
 * a fresh module (the old one and its memory are garbage collected) and report `outcome`.
 */
export class BrokenModule extends Error {
  constructor(
    readonly outcome: Outcome,
    cause: unknown,
  ) {
    super(`the QuickJS module broke: ${String(cause)}`);
  }
}

function hostFailure(error: unknown): Outcome {
  if (error instanceof RangeError) return { ok: false, message: STACK_MESSAGE, retryable: false };
  return { ok: false, message: `js: the sandbox failed (${String(error)})`, retryable: true };
}

/** Runs one evaluation. Throws BrokenModule when the module must be replaced. */
export function evaluate(
  quickjs: QuickJSWASMModule,
  code: string,
  inputJson: string,
  limits: EvaluationLimits,
  outOfMemory: () => boolean,
): Outcome {
  const deadline = Date.now() + limits.timeoutMs;
  let interrupted = false;
  let outcome: Outcome;
  let runtime: QuickJSRuntime | undefined;
  let context: QuickJSContext | undefined;
  let captured: InstalledConsole | undefined;
  try {
    runtime = quickjs.newRuntime({
      memoryLimitBytes: limits.memoryBytes,
      maxStackSizeBytes: limits.stackBytes,
      interruptHandler: () => {
        interrupted ||= Date.now() > deadline;
        return interrupted;
      },
    });
    context = runtime.newContext();
    captured = installConsole(context, { lines: limits.logLines, chars: limits.logChars });
    outcome = {
      ok: true,
      output: run({ runtime, context, limits, interrupted: () => interrupted, outOfMemory }, code, inputJson),
    };
  } catch (failure) {
    if (!(failure instanceof Failure)) throw new BrokenModule(hostFailure(failure), failure);
    outcome = { ok: false, message: failure.message, retryable: failure.retryable };
  }
  try {
    const logs = captured?.logs();
    if (logs && (logs.lines.length > 0 || logs.dropped > 0)) outcome.logs = logs;
    context?.dispose();
    runtime?.dispose();
  } catch (error) {
    throw new BrokenModule(outcome, error);
  }
  return outcome;
}
