export { type TracingEnv, type TracingSettings, tracingEnvSchema, tracingSettings } from "./settings.ts";
export { startTracing } from "./setup.ts";
