export { createAuthenticator } from "./accounts/authenticate.ts";
export type { AccountsDeps } from "./accounts/deps.ts";
export { createResetLink } from "./accounts/password-reset.ts";
export * from "./broker/index.ts";
export * from "./caller.ts";
export * from "./config.ts";
export * from "./config-reference.ts";
export { createServices, openConfiguredDatabase, type ServicesHandle } from "./container.ts";
export * from "./errors.ts";
export { type FlowsDeps, getFlow } from "./flows/flows.ts";
export * from "./flows/index.ts";
export { flowSchedulerJob } from "./flows/scheduler.ts";
export { findFlowByWebhookId } from "./flows/webhook-flows.ts";
export { handleGatewayRequest } from "./gateways/ingress.ts";
export {
  type ConsumerGroupRef,
  type HousekeepingOptions,
  type HousekeepingReport,
  housekeep,
  housekeepingJob,
} from "./housekeeping/housekeeping.ts";
export { EXPIRY_RULES, type ExpiryRule } from "./housekeeping/rules.ts";
export * from "./logger.ts";
export { handleMcpRequest } from "./mcp-server/endpoint.ts";
export { buildOpenApiDocument } from "./openapi.ts";
export { readAtMost } from "./read-at-most.ts";
export { bodyReadFailure, readUtf8Text } from "./request-body.ts";
export { type ResealReport, resealAll } from "./reseal.ts";
export { type AppRouter, appRouter } from "./router.ts";
export { outcomeResponse, startRunByHand } from "./runs/http.ts";
export type { RunOutcome, RunsService } from "./runs/service.ts";
export { createSealer, loadSecretsKeys, type Sealer } from "./sealing.ts";
export type { Authenticator, Services } from "./services.ts";
export * from "./tracing/index.ts";
export { type Context, createContext, type DescribedError, describeError } from "./trpc.ts";
export * from "./webhooks/index.ts";
export { deliveryWindowJob } from "./webhooks/ingress/dedup-window.ts";
export { receiveWebhook } from "./webhooks/ingress/receive.ts";
export { platformConsumers, platformJobs } from "./worker/consumers.ts";
export * from "./worker/index.ts";
