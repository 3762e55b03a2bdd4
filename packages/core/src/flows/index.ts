/**
 * What other areas use of flows: types and the revision reader the engine uses. Entry points that
 * take `Services` or a service's dependencies (`getFlow`, `findFlowByWebhookId`, `flowSchedulerJob`)
 * are imported from their own modules, so that importing this barrel never reaches `services.ts`
 * (the dependency check in `bun run lint` holds every area barrel to that).
 */
export { type FlowRevision, readRevision } from "./revisions.ts";
export type { Flow } from "./schemas.ts";
export { STEP_OPTION_DEFAULTS } from "./step-defaults.ts";
export type { WebhookFlow } from "./webhook-flows.ts";
