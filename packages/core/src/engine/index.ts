/** The engine's building blocks the run consumer wires together. */

export { createModuleSteps, type ModuleStepsHandle } from "./module-steps.ts";
export {
  createHttpRequestStep,
  type HttpRequestStep,
  type HttpRequestStepOptions,
  type HttpResponse,
} from "./safe-http/index.ts";
export { createSandbox, type Sandbox, type SandboxOptions } from "./sandbox/index.ts";
export { isStepFailure, StepFailure } from "./step-failure.ts";
