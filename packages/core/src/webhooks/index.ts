/**
 * The HTTP-free core of the webhook ingress: trigger security settings, body reading and
 * parsing, signature verification per service, event types, delivery ids and the
 * trigger data a run starts with. The ingress route calls these in this order:
 * readWebhookBody → verifyWebhookSignature → parseWebhookBody → slackUrlVerification →
 * webhookEventType / webhookDeliveryId → buildWebhookTriggerData. The ingress itself
 * (`ingress/receive.ts`) and its jobs take `Services` and are imported from their modules, so
 * that importing this barrel never reaches `services.ts`.
 */
export * from "./body.ts";
export * from "./events.ts";
export { mediaTypeOf } from "./media-type.ts";
export { readWebhookBody } from "./read-body.ts";
export * from "./schemas.ts";
export * from "./signatures/index.ts";
export * from "./trigger-data.ts";
