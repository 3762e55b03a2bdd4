/**
 * `http.request` and `js` as the engine's step functions (ModuleSteps), built from the step
 * settings; the run consumer builds them unless it is handed its own. The js
 * sandbox's Worker threads start with the first js step, so a process that never runs one
 * (or a consumer list built only to read its definitions) starts none.
 */
import type { StepsConfig } from "../config.ts";
import type { ModuleSteps } from "./built-ins.ts";
import { createHttpRequestStep } from "./safe-http/index.ts";
import { createSandbox, type Sandbox } from "./sandbox/index.ts";
import { StepFailure } from "./step-failure.ts";

export interface ModuleStepsHandle extends ModuleSteps {
  /** Stops the sandbox's Worker threads (they never keep the process alive on their own). */
  close(): Promise<void>;
}

/** The js step's payload is `{code}`: the module's source text. */
function codeOf(payload: unknown): string {
  const code = (payload as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || code.trim() === "") {
    throw new StepFailure("js: payload.code must be the module's source text", false);
  }
  return code;
}

export function createModuleSteps(config: StepsConfig): ModuleStepsHandle {
  const request = createHttpRequestStep(config.http);
  let sandbox: Sandbox | undefined;
  return {
    "http.request": (payload, context) => request(payload, context.signal, (http) => context.note?.({ http })),
    js: async (payload, context) => {
      const code = codeOf(payload);
      sandbox ??= createSandbox(config.js);
      return sandbox.run(
        code,
        { trigger: context.trigger, steps: context.steps },
        { timeoutMs: context.timeoutMs, onLogs: (logs) => context.note?.({ logs }) },
      );
    },
    async close() {
      await sandbox?.close();
    },
  };
}
