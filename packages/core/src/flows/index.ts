/** What other areas use of flows: the engine reads revisions, the webhook ingress finds a flow by its webhook id. */
export { type FlowsDeps, getFlow } from "./flows.ts";
export {
  type ConcurrencyLimit,
  type FlowRevision,
  readRevision,
  type StoredStep,
  type ThrottleLimit,
} from "./revisions.ts";
export { flowSchedulerJob } from "./scheduler.ts";
export type { Flow, TriggerSettings } from "./schemas.ts";
export { STEP_OPTION_DEFAULTS, type StepOptions } from "./step-defaults.ts";
export { findFlowByWebhookId, type WebhookFlow } from "./webhook-flows.ts";
